// Package pvefirewall holds the names pve-firewall checks rules against
// (src/PVE/Firewall.pm): services, protocols, ICMP types and the macros
// with their template rules. Data only, imported by both the manifest's
// rule checks and the simulator, so the two read one copy of Proxmox's
// lists.
package pvefirewall

import "strings"

// The names pve-firewall reads from the node's /etc/services and
// /etc/protocols (Firewall.pm get_etc_services, get_etc_protocols), as
// Debian's netbase ships them: a port may be a service's first name, a
// protocol its name or number.

// ServiceNames are the first names of /etc/services entries for tcp,
// udp or sctp.
var ServiceNames = fieldSet(`
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

// Protocols are /etc/protocols' names and numbers, plus the icmpv6
// special case get_etc_protocols adds.
var Protocols = fieldSet(`
ip 0 hopopt icmp 1 igmp 2 ggp 3 ipencap 4 st 5 tcp 6 egp 8 igp 9 pup 12 udp
17 hmp 20 xns-idp 22 rdp 27 iso-tp4 29 dccp 33 xtp 36 ddp 37 idpr-cmtp 38
ipv6 41 ipv6-route 43 ipv6-frag 44 idrp 45 rsvp 46 gre 47 esp 50 ah 51 skip
57 ipv6-icmp 58 ipv6-nonxt 59 ipv6-opts 60 rspf 73 vmtp 81 eigrp 88 ospf
89 ax.25 93 ipip 94 etherip 97 encap 98 pim 103 ipcomp 108 vrrp 112 l2tp
115 isis 124 sctp 132 fc 133 mobility-header 135 udplite 136 mpls-in-ip
137 manet 138 hip 139 shim6 140 wesp 141 rohc 142 ethernet 143 mptcp 262
icmpv6
`)

func fieldSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.Fields(s) {
		out[f] = true
	}
	return out
}

// Macros is Firewall.pm $pve_fw_macros: name, description, and each
// template rule as "key=value" fields separated by ";" (the action is
// always the rule's own).
var Macros = []Macro{
	{"Amanda", "Amanda Backup", "dport=10080 proto=udp; dport=10080 proto=tcp"},
	{"Auth", "Auth (identd) traffic", "dport=113 proto=tcp"},
	{"BGP", "Border Gateway Protocol traffic", "dport=179 proto=tcp"},
	{"BitTorrent", "BitTorrent traffic for BitTorrent 3.1 and earlier", "dport=6881:6889 proto=tcp; dport=6881 proto=udp"},
	{"BitTorrent32", "BitTorrent traffic for BitTorrent 3.2 and later", "dport=6881:6999 proto=tcp; dport=6881 proto=udp"},
	{"CVS", "Concurrent Versions System pserver traffic", "dport=2401 proto=tcp"},
	{"Ceph", "Ceph Storage Cluster traffic (Ceph Monitors, OSD & MDS Daemons)", "dport=6789 proto=tcp; dport=3300 proto=tcp; dport=6800:7300 proto=tcp"},
	{"Citrix", "Citrix/ICA traffic (ICA, ICA Browser, CGP)", "dport=1494 proto=tcp; dport=1604 proto=udp; dport=2598 proto=tcp"},
	{"DAAP", "Digital Audio Access Protocol traffic (iTunes, Rythmbox daemons)", "dport=3689 proto=tcp; dport=3689 proto=udp"},
	{"DCC", "Distributed Checksum Clearinghouse spam filtering mechanism", "dport=6277 proto=tcp"},
	{"DHCPfwd", "Forwarded DHCP traffic", "dport=67:68 proto=udp sport=67:68"},
	{"DNS", "Domain Name System traffic (upd and tcp)", "dport=53 proto=udp; dport=53 proto=tcp"},
	{"Distcc", "Distributed Compiler service", "dport=3632 proto=tcp"},
	{"FTP", "File Transfer Protocol", "dport=21 proto=tcp"},
	{"Finger", "Finger protocol (RFC 742)", "dport=79 proto=tcp"},
	{"GNUnet", "GNUnet secure peer-to-peer networking traffic", "dport=2086 proto=tcp; dport=2086 proto=udp; dport=1080 proto=tcp; dport=1080 proto=udp"},
	{"GRE", "Generic Routing Encapsulation tunneling protocol", "proto=47"},
	{"Git", "Git distributed revision control traffic", "dport=9418 proto=tcp"},
	{"HKP", "OpenPGP HTTP key server protocol traffic", "dport=11371 proto=tcp"},
	{"HTTP", "Hypertext Transfer Protocol (WWW)", "dport=80 proto=tcp"},
	{"HTTPS", "Hypertext Transfer Protocol (WWW) over SSL", "dport=443 proto=tcp"},
	{"ICPV2", "Internet Cache Protocol V2 (Squid) traffic", "dport=3130 proto=udp"},
	{"ICQ", "AOL Instant Messenger traffic", "dport=5190 proto=tcp"},
	{"IMAP", "Internet Message Access Protocol", "dport=143 proto=tcp"},
	{"IMAPS", "Internet Message Access Protocol over SSL", "dport=993 proto=tcp"},
	{"IPIP", "IPIP capsulation traffic", "proto=94"},
	{"IPsec", "IPsec traffic", "dport=500 proto=udp sport=500; proto=50"},
	{"IPsecah", "IPsec authentication (AH) traffic", "dport=500 proto=udp sport=500; proto=51"},
	{"IPsecnat", "IPsec traffic and Nat-Traversal", "dport=500 proto=udp; dport=4500 proto=udp; proto=50"},
	{"IRC", "Internet Relay Chat traffic", "dport=6667 proto=tcp"},
	{"Jetdirect", "HP Jetdirect printing", "dport=9100 proto=tcp"},
	{"L2TP", "Layer 2 Tunneling Protocol traffic", "dport=1701 proto=udp"},
	{"LDAP", "Lightweight Directory Access Protocol traffic", "dport=389 proto=tcp"},
	{"LDAPS", "Secure Lightweight Directory Access Protocol traffic", "dport=636 proto=tcp"},
	{"MDNS", "Multicast DNS", "dport=5353 proto=udp"},
	{"MSNP", "Microsoft Notification Protocol", "dport=1863 proto=tcp"},
	{"MSSQL", "Microsoft SQL Server", "dport=1433 proto=tcp"},
	{"Mail", "Mail traffic (SMTP, SMTPS, Submission)", "dport=25 proto=tcp; dport=465 proto=tcp; dport=587 proto=tcp"},
	{"Munin", "Munin networked resource monitoring traffic", "dport=4949 proto=tcp"},
	{"MySQL", "MySQL server", "dport=3306 proto=tcp"},
	{"NNTP", "NNTP traffic (Usenet).", "dport=119 proto=tcp"},
	{"NNTPS", "Encrypted NNTP traffic (Usenet)", "dport=563 proto=tcp"},
	{"NTP", "Network Time Protocol (ntpd)", "dport=123 proto=udp"},
	{"OSPF", "OSPF multicast traffic", "proto=89"},
	{"OpenVPN", "OpenVPN traffic", "dport=1194 proto=udp"},
	{"PCA", "Symantec PCAnywere (tm)", "dport=5632 proto=udp; dport=5631 proto=tcp"},
	{"PMG", "Proxmox Mail Gateway web interface", "dport=8006 proto=tcp"},
	{"POP3", "POP3 traffic", "dport=110 proto=tcp"},
	{"POP3S", "Encrypted POP3 traffic", "dport=995 proto=tcp"},
	{"PPtP", "Point-to-Point Tunneling Protocol", "proto=47; dport=1723 proto=tcp"},
	{"Ping", "ICMP echo request", "dport=echo-request proto=icmp"},
	{"PostgreSQL", "PostgreSQL server", "dport=5432 proto=tcp"},
	{"Printer", "Line Printer protocol printing", "dport=515 proto=tcp"},
	{"RDP", "Microsoft Remote Desktop Protocol traffic", "dport=3389 proto=tcp"},
	{"RIP", "Routing Information Protocol (bidirectional)", "dport=520 proto=udp"},
	{"RNDC", "BIND remote management protocol", "dport=953 proto=tcp"},
	{"Razor", "Razor Antispam System", "dport=2703 proto=tcp"},
	{"Rdate", "Remote time retrieval (rdate)", "dport=37 proto=tcp"},
	{"Rsync", "Rsync server", "dport=873 proto=tcp"},
	{"SANE", "SANE network scanning", "dport=6566 proto=tcp"},
	{"SMB", "Microsoft SMB traffic", "dport=135,445 proto=udp; dport=137:139 proto=udp; dport=1024:65535 proto=udp sport=137; dport=135,139,445 proto=tcp"},
	{"SMBswat", "Samba Web Administration Tool", "dport=901 proto=tcp"},
	{"SMTP", "Simple Mail Transfer Protocol", "dport=25 proto=tcp"},
	{"SMTPS", "Encrypted Simple Mail Transfer Protocol", "dport=465 proto=tcp"},
	{"SNMP", "Simple Network Management Protocol", "dport=161:162 proto=udp; dport=161 proto=tcp"},
	{"SPAMD", "Spam Assassin SPAMD traffic", "dport=783 proto=tcp"},
	{"SPICEproxy", "Proxmox VE SPICE display proxy traffic", "dport=3128 proto=tcp"},
	{"SSH", "Secure shell traffic", "dport=22 proto=tcp"},
	{"SVN", "Subversion server (svnserve)", "dport=3690 proto=tcp"},
	{"SixXS", "SixXS IPv6 Deployment and Tunnel Broker", "dport=3874 proto=tcp; dport=3740 proto=udp; proto=41; dport=5072,8374 proto=udp"},
	{"Squid", "Squid web proxy traffic", "dport=3128 proto=tcp"},
	{"Submission", "Mail message submission traffic", "dport=587 proto=tcp"},
	{"Syslog", "Syslog protocol (RFC 5424) traffic", "dport=514 proto=udp; dport=514 proto=tcp"},
	{"TFTP", "Trivial File Transfer Protocol traffic", "dport=69 proto=udp"},
	{"Telnet", "Telnet traffic", "dport=23 proto=tcp"},
	{"Telnets", "Telnet over SSL", "dport=992 proto=tcp"},
	{"Time", "RFC 868 Time protocol", "dport=37 proto=tcp"},
	{"Trcrt", "Traceroute (for up to 30 hops) traffic", "dport=33434:33524 proto=udp; dport=echo-request proto=icmp"},
	{"VNC", "VNC traffic for VNC display's 0 - 99", "dport=5900:5999 proto=tcp"},
	{"VNCL", "VNC traffic from Vncservers to Vncviewers in listen mode", "dport=5500 proto=tcp"},
	{"Web", "WWW traffic (HTTP and HTTPS)", "dport=80 proto=tcp; dport=443 proto=tcp"},
	{"Webcache", "Web Cache/Proxy traffic (port 8080)", "dport=8080 proto=tcp"},
	{"Webmin", "Webmin traffic", "dport=10000 proto=tcp"},
	{"Whois", "Whois (nicname, RFC 3912) traffic", "dport=43 proto=tcp"},
}

// MacrosV6 is $pve_ipv6fw_macros: the templates used for an IPv6 rule;
// those without an IPv4 twin are IPv6-only macros (init_firewall_macros).
var MacrosV6 = []Macro{
	{"DHCPv6", "DHCPv6 traffic", "dport=546:547 proto=udp sport=546:547"},
	{"NeighborDiscovery", "IPv6 neighbor solicitation, neighbor and router advertisement", "dport=router-solicitation proto=icmpv6; dport=router-advertisement proto=icmpv6; dport=neighbor-solicitation proto=icmpv6; dport=neighbor-advertisement proto=icmpv6"},
	{"Ping", "", "dport=echo-request proto=icmpv6"},
	{"Trcrt", "", "dport=33434:33524 proto=udp; dport=echo-request proto=icmpv6"},
}

// ICMPTypes is $icmp_type_names (iptables -p icmp -h).
var ICMPTypes = fieldSet(`
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

// ICMPv6Types is $icmpv6_type_names (ip6tables -p icmpv6 -h).
var ICMPv6Types = fieldSet(`
destination-unreachable no-route communication-prohibited
beyond-scope address-unreachable port-unreachable failed-policy
reject-route packet-too-big time-exceeded ttl-zero-during-transit
ttl-zero-during-reassembly parameter-problem bad-header unknown-header-type
unknown-option echo-request echo-reply router-solicitation
router-advertisement neighbor-solicitation neighbour-solicitation
neighbor-advertisement neighbour-advertisement redirect
`)

// Macro is one macro: its name, description and template rules, each
// "key=value" fields, the rules separated by ";".
type Macro struct{ Name, Descr, Rules string }

// Templates parses the macro's template rules.
func (m Macro) Templates() []map[string]string {
	var out []map[string]string
	for _, r := range strings.Split(m.Rules, ";") {
		t := map[string]string{}
		for _, kv := range strings.Fields(r) {
			k, v, _ := strings.Cut(kv, "=")
			t[k] = v
		}
		out = append(out, t)
	}
	return out
}
