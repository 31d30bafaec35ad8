package main

import (
	"bufio"
	"bytes"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The documents a newcomer reads. Every proxmops command and flag they name
// must be in the program's --help output, every make target in the Makefile.
var docFiles = []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "docs/*.md", "examples/README.md"}

// foreignFlags are flags of other programs that the docs show on their own
// (not in a command line that names the program), with the program.
var foreignFlags = map[string]string{
	"--privsep":     "pveum user token add",
	"--disable-gpu": "chromium",
}

// helpInfo is what `proxmops [command] --help` shows.
type helpInfo struct {
	commands map[string]bool            // subcommands of the root
	flags    map[string]map[string]bool // command ("" for the root) -> flags
	subs     map[string]map[string]bool // command -> its own subcommands
}

var (
	helpSectionRE = regexp.MustCompile(`^(Available Commands|Flags|Global Flags):$`)
	helpFlagRE    = regexp.MustCompile(`^\s+(?:-\w, )?(--[a-z0-9][a-z0-9-]*)`)
	helpCmdRE     = regexp.MustCompile(`^\s+([a-z][a-z0-9-]*)\s`)
)

func resetFlags() {
	reset := func(fs *pflag.FlagSet) {
		fs.VisitAll(func(f *pflag.Flag) {
			_ = f.Value.Set(f.DefValue)
			f.Changed = false
		})
	}
	reset(rootCmd.Flags())
	for _, c := range rootCmd.Commands() {
		reset(c.Flags())
	}
}

// helpOutput runs the CLI with --help and returns what it printed.
func helpOutput(t *testing.T, args ...string) string {
	t.Helper()
	defer resetFlags()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	defer rootCmd.SetOut(nil)
	if code := run(append(args, "--help")); code != 0 {
		t.Fatalf("%v --help: exit %d", args, code)
	}
	return out.String()
}

// parseHelp returns the commands and flags a help text lists.
func parseHelp(text string) (cmds, flags map[string]bool) {
	cmds, flags = map[string]bool{}, map[string]bool{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		if m := helpSectionRE.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		if strings.TrimSpace(line) == "" || !strings.HasPrefix(line, " ") {
			section = ""
			continue
		}
		switch section {
		case "Available Commands":
			if m := helpCmdRE.FindStringSubmatch(line); m != nil {
				cmds[m[1]] = true
			}
		case "Flags", "Global Flags":
			if m := helpFlagRE.FindStringSubmatch(line); m != nil {
				flags[m[1]] = true
			}
		}
	}
	return cmds, flags
}

// installerCmd stands for packaging/install.sh among the commands: its
// flags are the ones its --help names.
const installerCmd = "install.sh"

func readHelp(t *testing.T) helpInfo {
	t.Helper()
	cmds, rootFlags := parseHelp(helpOutput(t))
	if len(cmds) < 8 {
		t.Fatalf("root --help lists only %v", cmds)
	}
	h := helpInfo{commands: cmds, flags: map[string]map[string]bool{"": rootFlags}, subs: map[string]map[string]bool{}}
	for c := range cmds {
		subs, f := parseHelp(helpOutput(t, c))
		h.flags[c], h.subs[c] = f, subs
	}
	out, err := exec.Command("sh", filepath.Join("..", "..", "packaging", "install.sh"), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh --help: %v\n%s", err, out)
	}
	h.flags[installerCmd] = map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z][a-z-]*)`).FindAllStringSubmatch(string(out), -1) {
		h.flags[installerCmd][m[1]] = true
	}
	if len(h.flags[installerCmd]) < 3 {
		t.Fatalf("install.sh --help names only %v:\n%s", h.flags[installerCmd], out)
	}
	h.commands[installerCmd] = true
	return h
}

var shellFences = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true}

// mention is a command line or a lone flag found in a document.
type mention struct {
	where   string // file:line
	command string // "" for a lone flag
	arg     string // the first word after the command, when not a flag
	flags   []string
	section string // the command the enclosing heading names, if any
}

var (
	inlineCodeRE  = regexp.MustCompile("`([^`\n]+)`")
	flagTokenRE   = regexp.MustCompile(`(?:^|[\s\[|(])(--[a-z0-9][a-z0-9-]*)`)
	headingCmdRE  = regexp.MustCompile("^#+ .*`proxmops ([a-z][a-z0-9-]*)")
	proxmopsCmdRE = regexp.MustCompile(`(?:^|[\s;&|(])proxmops ([a-z][a-z0-9-]*)(.*)$`)
	makeTargetRE  = regexp.MustCompile(`(?:^|[\s;&|(])make ([a-z][a-z0-9-]*)`)
)

// scanDoc returns the proxmops command lines, lone flags and make targets
// of one Markdown file: in inline code and in fenced code blocks.
func scanDoc(t *testing.T, path string, commands map[string]bool) (ms []mention, targets map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	targets = map[string]string{}
	inFence, shellFence, section := false, false, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		where := path + ":" + strconv.Itoa(n)
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			// Shell blocks hold command lines; YAML and others only mention
			// the name in comments.
			inFence, shellFence = !inFence, shellFences[fence]
			continue
		}
		if inFence && !shellFence {
			continue
		}
		if !inFence && strings.HasPrefix(line, "#") {
			section = ""
			if m := headingCmdRE.FindStringSubmatch(line); m != nil {
				section = m[1]
			}
		}
		var spans []string
		if inFence {
			spans = []string{line}
		} else {
			for _, m := range inlineCodeRE.FindAllStringSubmatch(line, -1) {
				spans = append(spans, m[1])
			}
		}
		for _, s := range spans {
			for _, m := range makeTargetRE.FindAllStringSubmatch(s, -1) {
				targets[m[1]] = where
			}
			ms = append(ms, spanMentions(s, where, section, inFence, commands)...)
		}
	}
	return ms, targets
}

// spanMentions reads one code span or code line: "proxmops CMD --flags",
// "CMD --flag" (a span starting with a command's name), or "--flag" alone.
func spanMentions(s, where, section string, fenced bool, commands map[string]bool) []mention {
	flagsOf := func(text string) []string {
		var out []string
		for _, m := range flagTokenRE.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
		return out
	}
	// A shell line may hold several commands (a && b): each proxmops one,
	// and the installer's.
	var ms []mention
	for _, part := range regexp.MustCompile(`&&|\|\||;|\|[^|]`).Split(s, -1) {
		if m := proxmopsCmdRE.FindStringSubmatch(part); m != nil {
			arg, _, _ := strings.Cut(strings.TrimSpace(m[2]), " ")
			if strings.HasPrefix(arg, "-") {
				arg = ""
			}
			ms = append(ms, mention{where: where, command: m[1], arg: arg, flags: flagsOf(m[2])})
		} else if _, rest, ok := strings.Cut(part, "install.sh"); ok {
			ms = append(ms, mention{where: where, command: installerCmd, flags: flagsOf(rest)})
		}
	}
	if len(ms) > 0 || fenced {
		return ms
	}
	first, rest, _ := strings.Cut(strings.TrimSpace(s), " ")
	switch {
	case commands[first] && strings.HasPrefix(strings.TrimSpace(rest), "--"):
		return []mention{{where: where, command: first, flags: flagsOf(rest)}}
	case strings.HasPrefix(first, "--"):
		return []mention{{where: where, flags: flagsOf(first), section: section}}
	}
	return nil
}

// docTexts yields each document docPaths names with its text.
func docTexts(t *testing.T) iter.Seq2[string, string] {
	t.Helper()
	paths := docPaths(t)
	return func(yield func(path, text string) bool) {
		for _, p := range paths {
			if !yield(p, readText(t, p)) {
				return
			}
		}
	}
}

// readText is the content of the file at path.
func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func docPaths(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range docFiles {
		m, err := filepath.Glob(filepath.Join("..", "..", pat))
		if err != nil || len(m) == 0 {
			t.Fatalf("no document matches %s", pat)
		}
		out = append(out, m...)
	}
	return out
}

func TestDocsNameOnlyCommandsAndFlagsThatExist(t *testing.T) {
	h := readHelp(t)
	allFlags := map[string]bool{}
	for _, fl := range h.flags {
		for f := range fl {
			allFlags[f] = true
		}
	}
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range docPaths(t) {
		ms, targets := scanDoc(t, path, h.commands)
		for _, m := range ms {
			checked++
			switch {
			case m.command != "" && !h.commands[m.command]:
				t.Errorf("%s: `proxmops %s` is not a command (proxmops --help lists %s)", m.where, m.command, keys(h.commands))
			case m.command != "":
				if subs := h.subs[m.command]; len(subs) > 0 && m.arg != "" && !subs[m.arg] && m.command != "help" {
					t.Errorf("%s: `proxmops %s %s`: %s is no subcommand (`proxmops %s --help` lists %s)", m.where, m.command, m.arg, m.arg, m.command, keys(subs))
				}
				for _, f := range m.flags {
					if !h.flags[m.command][f] {
						t.Errorf("%s: `proxmops %s %s`: no such flag in `proxmops %s --help`", m.where, m.command, f, m.command)
					}
				}
			default:
				for _, f := range m.flags {
					if _, ok := foreignFlags[f]; ok {
						continue
					}
					if m.section != "" && h.commands[m.section] && !h.flags[m.section][f] {
						t.Errorf("%s: %s is not a flag of `proxmops %s`", m.where, f, m.section)
					} else if !allFlags[f] {
						t.Errorf("%s: %s is not a flag of any proxmops command", m.where, f)
					}
				}
			}
		}
		for target, where := range targets {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
				t.Errorf("%s: `make %s`: the Makefile has no such target", where, target)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d mentions found: the scanner is broken", checked)
	}
}

// The README's command table lists every command --help shows.
func TestReadmeListsEveryCommand(t *testing.T) {
	h := readHelp(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for c := range h.commands {
		if c == "help" || c == "completion" || c == installerCmd {
			continue
		}
		if !strings.Contains(string(readme), "| `proxmops "+c) {
			t.Errorf("README.md's command table has no row for `proxmops %s`", c)
		}
	}
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
