package importer

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseEnvReadsWhatTheShellWouldSource(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		prior map[string]string
		want  map[string]string
		probs []string // substrings of the problems' reasons, in order
	}{
		{name: "the seed's container.env", text: "IP=192.168.178.42\nID=42\nCORES=2\nMEMORY=2048\nSWAP=512\nDISK=local-lvm:8\nBOOT=yes\n",
			want: map[string]string{"IP": "192.168.178.42", "ID": "42", "CORES": "2", "MEMORY": "2048", "SWAP": "512", "DISK": "local-lvm:8", "BOOT": "yes"}},
		{name: "double quotes as Proxmox-GitOps writes them", text: `IP="192.168.178.109"` + "\n" + `MOUNT=""`,
			want: map[string]string{"IP": "192.168.178.109", "MOUNT": ""}},
		{name: "single quotes are literal", text: `A='x $B "y"'`, want: map[string]string{"A": `x $B "y"`}},
		{name: "escapes inside double quotes", text: `A="a \"b\" \\ \$c"`, want: map[string]string{"A": `a "b" \ $c`}},
		{name: "comment lines and blank lines", text: "# header\n\n   # indented\nA=1\n", want: map[string]string{"A": "1"}},
		{name: "comment after a quoted value", text: `MOUNT="share" # (container.local.env) MOUNT="share,/dev/x"`, want: map[string]string{"MOUNT": "share"}},
		{name: "comment after an unquoted value", text: "CORES=2   # two", want: map[string]string{"CORES": "2"}},
		{name: "a # inside a word is not a comment", text: "A=b#c", want: map[string]string{"A": "b#c"}},
		{name: "export prefix", text: "export IP=10.0.0.1\nexport\tID=101", want: map[string]string{"IP": "10.0.0.1", "ID": "101"}},
		{name: "a key named like export", text: "exported=1", want: map[string]string{"exported": "1"}},
		{name: "later assignment wins", text: "A=1\nA=2", want: map[string]string{"A": "2"}},
		{name: "expansion of an earlier key", text: "NET=192.168.178\nIP=$NET.42\nGW=\"${NET}.1\"", want: map[string]string{"NET": "192.168.178", "IP": "192.168.178.42", "GW": "192.168.178.1"}},
		{name: "expansion from a file sourced before", text: "IP=${BASE}.7", prior: map[string]string{"BASE": "10.1.1"}, want: map[string]string{"IP": "10.1.1.7"}},
		{name: "an unset variable expands to nothing, reported", text: "IP=$UNSET", want: map[string]string{"IP": ""}, probs: []string{"$UNSET is not set"}},
		{name: "a lone dollar is literal", text: "A=5$", want: map[string]string{"A": "5$"}},
		{name: "CRLF line ends", text: "A=1\r\nB=\"2\"\r\n", want: map[string]string{"A": "1", "B": "2"}},
		{name: "quoted value over two lines", text: "A=\"one\ntwo\"\nB=3", want: map[string]string{"A": "one\ntwo", "B": "3"}},
		{name: "spaces around = make a command, not an assignment", text: "A = 1\nB=2", want: map[string]string{"B": "2"}, probs: []string{"not a KEY=value assignment"}},
		{name: "a command line", text: "source ./other.env\nA=1", want: map[string]string{"A": "1"}, probs: []string{"not a KEY=value assignment"}},
		{name: "unclosed quote", text: "A=\"open", want: map[string]string{}, probs: []string{"unclosed double quote"}},
		{name: "command substitution is not run", text: "A=$(hostname)\nB=`id`", want: map[string]string{}, probs: []string{"command substitution", "command substitution"}},
		{name: "default-value expansion is not evaluated", text: "A=${X:-1}", want: map[string]string{}, probs: []string{"parameter expansion"}},
		{name: "two assignments on a line", text: "A=1 B=2", want: map[string]string{"A": "1"}, probs: []string{`text after the value of A ("B=2")`}},
		{name: "shell operators", text: "A=1;B=2", want: map[string]string{}, probs: []string{`shell syntax ";"`}},
		{name: "names with digits and underscores", text: "_X1=a\n1X=b", want: map[string]string{"_X1": "a"}, probs: []string{"not a KEY=value assignment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars, probs := ParseEnv(tt.text, tt.prior)
			got := map[string]string{}
			for _, v := range vars {
				got[v.Key] = v.Value
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("values %q, want %q", got, tt.want)
			}
			if len(probs) != len(tt.probs) {
				t.Fatalf("problems %+v, want %d", probs, len(tt.probs))
			}
			for i, p := range probs {
				if !strings.Contains(p.Reason, tt.probs[i]) {
					t.Errorf("problem %d: %q, want it to say %q", i, p.Reason, tt.probs[i])
				}
			}
		})
	}
}

// Each value and problem names its line, for the report.
func TestParseEnvNamesLines(t *testing.T) {
	vars, probs := ParseEnv("# c\nA=1\n\nnot an assignment\nB=\"x\ny\"\nC=3", nil)
	lines := map[string]int{}
	for _, v := range vars {
		lines[v.Key] = v.Line
	}
	if want := map[string]int{"A": 2, "B": 5, "C": 7}; !reflect.DeepEqual(lines, want) {
		t.Errorf("lines %v, want %v", lines, want)
	}
	if len(probs) != 1 || probs[0].Line != 4 || probs[0].Text != "not an assignment" {
		t.Errorf("problems %+v", probs)
	}
}
