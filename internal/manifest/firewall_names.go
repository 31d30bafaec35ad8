package manifest

import "strings"

// The names pve-firewall checks rules against (src/PVE/Firewall.pm): the
// first names of the node's /etc/services and /etc/protocols as Debian's
// netbase ships them (get_etc_services, get_etc_protocols), the ICMP type
// names ($icmp_type_names, $icmpv6_type_names) and the macros
// ($pve_fw_macros, $pve_ipv6fw_macros) with the proto, dport and sport of
// their template rules.

// fwServiceNames are the service names a port may be given as.
var fwServiceNames = wordSet(`
tcpmux echo discard systat daytime netstat qotd chargen ftp-data
ftp fsp ssh telnet smtp time whois tacacs domain bootps bootpc tftp
gopher finger http kerberos iso-tsap acr-nema pop3 sunrpc auth nntp ntp
epmap netbios-ns netbios-dgm netbios-ssn imap2 snmp snmp-trap cmip-man
cmip-agent mailq xdmcp bgp smux qmtp z3950 ipx ptp-event ptp-general
pawserv zserv rpc2portmap codaauth2 clearcase ldap svrloc https snpp
microsoft-ds kpasswd submissions saft isakmp rtsp nqs asf-rmcp qmqp ipp
ldp exec biff login who shell syslog printer talk ntalk route gdomap uucp
klogin kshell dhcpv6-client dhcpv6-server afpovertcp nntps submission
ldaps tinc silc kerberos-adm domain-s rsync ftps-data ftps telnets imaps
pop3s socks proofd rootd openvpn rmiregistry lotusnote ms-sql-s ms-sql-m
ingreslock datametrics sa-msg-port kermit groupwise l2f radius radius-acct
cisco-sccp nfs gnunet rtcm-sc104 gsigatekeeper gris cvspserver venus
venus-se codasrv codasrv-se mon dict f5-globalsite gsiftp gpsd gds-db
icpv2 isns iscsi-target mysql ms-wbt-server nut distcc daap svn suucp
sysrqd sieve epmd remctl f5-iquery ntske ipsec-nat-t iax mtn radmin-port
sip sip-tls xmpp-client xmpp-server cfengine mdns postgresql freeciv
amqps amqp x11 x11-1 x11-2 x11-3 x11-4 x11-5 x11-6 x11-7 gnutella-svc
gnutella-rtr redis sge-qmaster sge-execd mysql-proxy babel ircs-u bbs
afs3-fileserver afs3-callback afs3-prserver afs3-vlserver afs3-kaserver
afs3-volser afs3-bos afs3-update afs3-rmtsys font-service http-alt puppet
bacula-dir bacula-fd bacula-sd xmms2 nbd zabbix-agent zabbix-trapper
amanda dicom hkp db-lsp dcap gsidcap wnn6 kerberos4 kerberos-master
passwd-server krb-prop zephyr-srv zephyr-clt zephyr-hm iprop supfilesrv
supfiledbg poppassd moira-db moira-update moira-ureg spamd skkserv predict
rmtcfg xtel xtelw zebrasrv zebra ripd ripngd ospfd bgpd ospf6d ospfapi
isisd fax hylafax munin rplay nrpe nsca canna syslog-tls sane-port ircd
zope-ftp tproxy omniorb clc-build-daemon xinetd git zope webmin kamanda
amandaidx amidxtape sgi-cmsd sgi-crsd sgi-gcd sgi-cad binkp asp csync2
dircproxy tfido fido
`)

// fwProtocolNames are the protocol names and numbers, plus icmpv6.
var fwProtocolNames = wordSet(`
ip 0 hopopt icmp 1 igmp 2 ggp 3 ipencap 4 st 5 tcp 6 egp 8 igp 9 pup 12 udp
17 hmp 20 xns-idp 22 rdp 27 iso-tp4 29 dccp 33 xtp 36 ddp 37 idpr-cmtp 38
ipv6 41 ipv6-route 43 ipv6-frag 44 idrp 45 rsvp 46 gre 47 esp 50 ah 51 skip
57 ipv6-icmp 58 ipv6-nonxt 59 ipv6-opts 60 rspf 73 vmtp 81 eigrp 88 ospf
89 ax.25 93 ipip 94 etherip 97 encap 98 pim 103 ipcomp 108 vrrp 112 l2tp
115 isis 124 sctp 132 fc 133 mobility-header 135 udplite 136 mpls-in-ip
137 manet 138 hip 139 shim6 140 wesp 141 rohc 142 ethernet 143 mptcp 262
icmpv6
`)

// fwICMPTypes are the icmp types of proto icmp.
var fwICMPTypes = wordSet(`
any echo-reply destination-unreachable network-unreachable
host-unreachable protocol-unreachable port-unreachable fragmentation-needed
source-route-failed network-unknown host-unknown network-prohibited
host-prohibited TOS-network-unreachable TOS-host-unreachable
communication-prohibited host-precedence-violation precedence-cutoff
source-quench redirect network-redirect host-redirect TOS-network-redirect
TOS-host-redirect echo-request router-advertisement router-solicitation
time-exceeded ttl-zero-during-transit ttl-zero-during-reassembly
parameter-problem ip-header-bad required-option-missing timestamp-request
timestamp-reply address-mask-request address-mask-reply
`)

// fwICMPv6Types are the icmp types of proto icmpv6 and ipv6-icmp.
var fwICMPv6Types = wordSet(`
destination-unreachable no-route communication-prohibited
beyond-scope address-unreachable port-unreachable failed-policy
reject-route packet-too-big time-exceeded ttl-zero-during-transit
ttl-zero-during-reassembly parameter-problem bad-header unknown-header-type
unknown-option echo-request echo-reply router-solicitation
router-advertisement neighbor-solicitation neighbour-solicitation
neighbor-advertisement neighbour-advertisement redirect
`)

// fwMacros are the macros by name: each template rule's "key=value"
// fields, the templates separated by ";". A macro only in the IPv6 list
// is IPv6-only (init_firewall_macros).
var fwMacros = map[string]string{
	"Amanda":       "dport=10080 proto=udp; dport=10080 proto=tcp",
	"Auth":         "dport=113 proto=tcp",
	"BGP":          "dport=179 proto=tcp",
	"BitTorrent":   "dport=6881:6889 proto=tcp; dport=6881 proto=udp",
	"BitTorrent32": "dport=6881:6999 proto=tcp; dport=6881 proto=udp",
	"CVS":          "dport=2401 proto=tcp",
	"Ceph":         "dport=6789 proto=tcp; dport=3300 proto=tcp; dport=6800:7300 proto=tcp",
	"Citrix":       "dport=1494 proto=tcp; dport=1604 proto=udp; dport=2598 proto=tcp",
	"DAAP":         "dport=3689 proto=tcp; dport=3689 proto=udp",
	"DCC":          "dport=6277 proto=tcp",
	"DHCPfwd":      "dport=67:68 proto=udp sport=67:68",
	"DNS":          "dport=53 proto=udp; dport=53 proto=tcp",
	"Distcc":       "dport=3632 proto=tcp",
	"FTP":          "dport=21 proto=tcp",
	"Finger":       "dport=79 proto=tcp",
	"GNUnet":       "dport=2086 proto=tcp; dport=2086 proto=udp; dport=1080 proto=tcp; dport=1080 proto=udp",
	"GRE":          "proto=47",
	"Git":          "dport=9418 proto=tcp",
	"HKP":          "dport=11371 proto=tcp",
	"HTTP":         "dport=80 proto=tcp",
	"HTTPS":        "dport=443 proto=tcp",
	"ICPV2":        "dport=3130 proto=udp",
	"ICQ":          "dport=5190 proto=tcp",
	"IMAP":         "dport=143 proto=tcp",
	"IMAPS":        "dport=993 proto=tcp",
	"IPIP":         "proto=94",
	"IPsec":        "dport=500 proto=udp sport=500; proto=50",
	"IPsecah":      "dport=500 proto=udp sport=500; proto=51",
	"IPsecnat":     "dport=500 proto=udp; dport=4500 proto=udp; proto=50",
	"IRC":          "dport=6667 proto=tcp",
	"Jetdirect":    "dport=9100 proto=tcp",
	"L2TP":         "dport=1701 proto=udp",
	"LDAP":         "dport=389 proto=tcp",
	"LDAPS":        "dport=636 proto=tcp",
	"MDNS":         "dport=5353 proto=udp",
	"MSNP":         "dport=1863 proto=tcp",
	"MSSQL":        "dport=1433 proto=tcp",
	"Mail":         "dport=25 proto=tcp; dport=465 proto=tcp; dport=587 proto=tcp",
	"Munin":        "dport=4949 proto=tcp",
	"MySQL":        "dport=3306 proto=tcp",
	"NNTP":         "dport=119 proto=tcp",
	"NNTPS":        "dport=563 proto=tcp",
	"NTP":          "dport=123 proto=udp",
	"OSPF":         "proto=89",
	"OpenVPN":      "dport=1194 proto=udp",
	"PCA":          "dport=5632 proto=udp; dport=5631 proto=tcp",
	"PMG":          "dport=8006 proto=tcp",
	"POP3":         "dport=110 proto=tcp",
	"POP3S":        "dport=995 proto=tcp",
	"PPtP":         "proto=47; dport=1723 proto=tcp",
	"Ping":         "dport=echo-request proto=icmp",
	"PostgreSQL":   "dport=5432 proto=tcp",
	"Printer":      "dport=515 proto=tcp",
	"RDP":          "dport=3389 proto=tcp",
	"RIP":          "dport=520 proto=udp",
	"RNDC":         "dport=953 proto=tcp",
	"Razor":        "dport=2703 proto=tcp",
	"Rdate":        "dport=37 proto=tcp",
	"Rsync":        "dport=873 proto=tcp",
	"SANE":         "dport=6566 proto=tcp",
	"SMB":          "dport=135,445 proto=udp; dport=137:139 proto=udp; dport=1024:65535 proto=udp sport=137; dport=135,139,445 proto=tcp",
	"SMBswat":      "dport=901 proto=tcp",
	"SMTP":         "dport=25 proto=tcp",
	"SMTPS":        "dport=465 proto=tcp",
	"SNMP":         "dport=161:162 proto=udp; dport=161 proto=tcp",
	"SPAMD":        "dport=783 proto=tcp",
	"SPICEproxy":   "dport=3128 proto=tcp",
	"SSH":          "dport=22 proto=tcp",
	"SVN":          "dport=3690 proto=tcp",
	"SixXS":        "dport=3874 proto=tcp; dport=3740 proto=udp; proto=41; dport=5072,8374 proto=udp",
	"Squid":        "dport=3128 proto=tcp",
	"Submission":   "dport=587 proto=tcp",
	"Syslog":       "dport=514 proto=udp; dport=514 proto=tcp",
	"TFTP":         "dport=69 proto=udp",
	"Telnet":       "dport=23 proto=tcp",
	"Telnets":      "dport=992 proto=tcp",
	"Time":         "dport=37 proto=tcp",
	"Trcrt":        "dport=33434:33524 proto=udp; dport=echo-request proto=icmp",
	"VNC":          "dport=5900:5999 proto=tcp",
	"VNCL":         "dport=5500 proto=tcp",
	"Web":          "dport=80 proto=tcp; dport=443 proto=tcp",
	"Webcache":     "dport=8080 proto=tcp",
	"Webmin":       "dport=10000 proto=tcp",
	"Whois":        "dport=43 proto=tcp",
}

// fwMacrosV6 are the IPv6 templates ($pve_ipv6fw_macros).
var fwMacrosV6 = map[string]string{
	"DHCPv6":            "dport=546:547 proto=udp sport=546:547",
	"NeighborDiscovery": "dport=router-solicitation proto=icmpv6; dport=router-advertisement proto=icmpv6; dport=neighbor-solicitation proto=icmpv6; dport=neighbor-advertisement proto=icmpv6",
	"Ping":              "dport=echo-request proto=icmpv6",
	"Trcrt":             "dport=33434:33524 proto=udp; dport=echo-request proto=icmpv6",
}

func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.Fields(s) {
		out[f] = true
	}
	return out
}
