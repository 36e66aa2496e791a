package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The configuration reference in docs/operations.md is generated from the
// flags parseConfig defines, so that it cannot drift from the program:
// TestConfigDoc renders the table and compares it with the block between
// the markers; with -update it rewrites that block instead.
var updateConfigDoc = flag.Bool("update", false, "rewrite docs/operations.md's configuration table from the flags")

const (
	configDocPath  = "../../docs/operations.md"
	configDocBegin = "<!-- config:begin -->"
	configDocEnd   = "<!-- config:end -->"
	configDocRegen = "go test ./cmd/shortener -run TestConfigDoc -update"
)

// configFlag is one flag as `shortener -h` describes it.
type configFlag struct {
	name, typ  string // typ as flag prints it: string, int, float, duration, "" for bool
	env        string // the environment variable whose value is the default
	secretFile bool   // env may also be given as env_FILE, a file holding it
	def        string // the built-in default, "" for the type's zero value
	usage      string // without the environment variable and the default
}

// usageTail splits a flag's usage as envFlags writes it and flag prints it:
// the text, "($ENV)" or "($ENV or $ENV_FILE)", then " (default X)" unless
// the default is the type's zero value.
var usageTail = regexp.MustCompile(`(?s)^(.*) \(\$(SHORTENER_[A-Z0-9_]+)( or \$SHORTENER_[A-Z0-9_]+_FILE)?\)(?: \(default (.*)\))?$`)

// configFlags runs parseConfig with -h and an empty environment, so the
// defaults it prints are the built-in ones, and reads back every flag.
// parseConfig builds its FlagSet inside, so what it prints for -h (what
// `shortener -h` shows a user) is the one way to read the flags.
func configFlags(tb testing.TB) []configFlag {
	tb.Helper()
	var out bytes.Buffer
	_, err := parseConfig([]string{"-h"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		tb.Fatalf("parseConfig -h: got %v, want %v", err, flag.ErrHelp)
	}
	// PrintDefaults: "  -name type" (no type for a bool), then the usage
	// on lines that begin with four spaces and a tab.
	var flags []configFlag
	var usage []string
	flush := func() {
		if len(flags) == 0 {
			return
		}
		f := &flags[len(flags)-1]
		m := usageTail.FindStringSubmatch(strings.Join(usage, " "))
		if m == nil {
			tb.Fatalf("flag -%s: usage %q does not end with ($SHORTENER_...): describe its environment variable as envFlags does", f.name, strings.Join(usage, " "))
		}
		f.usage, f.env, f.secretFile, f.def = m[1], m[2], m[3] != "", m[4]
		if f.typ == "string" && f.def != "" {
			if f.def, err = strconv.Unquote(f.def); err != nil {
				tb.Fatalf("flag -%s: default %s: %v", f.name, m[4], err)
			}
		}
		usage = nil
	}
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			flush()
			head, rest, inline := strings.Cut(strings.TrimPrefix(line, "  -"), "\t")
			if inline { // a one-letter bool flag: its usage on the same line
				usage = append(usage, rest)
			}
			name, typ, _ := strings.Cut(head, " ")
			flags = append(flags, configFlag{name: name, typ: typ})
		case strings.HasPrefix(line, "    \t"):
			usage = append(usage, strings.TrimPrefix(line, "    \t"))
		}
	}
	flush()
	if len(flags) == 0 {
		tb.Fatalf("parseConfig -h printed no flags:\n%s", out.String())
	}
	return flags
}

// defaultCell is a flag's default as the table shows it: "required" for a
// value the program cannot start without (the code key's built-in default
// is refused, and is not worth printing), the type's zero value spelled
// out, and durations without their zero minutes and seconds (24h, not
// 24h0m0s).
func (f configFlag) defaultCell() string {
	if strings.Contains(f.usage, "(required") {
		return "required"
	}
	d := f.def
	if d == "" {
		switch f.typ {
		case "string":
			return ""
		case "":
			d = "false"
		case "duration":
			d = "0s"
		default:
			d = "0"
		}
	}
	if f.typ == "duration" {
		if strings.HasSuffix(d, "m0s") {
			d = strings.TrimSuffix(d, "0s") // 5m0s: 5m; 1h0m0s: 1h0m
		}
		if strings.HasSuffix(d, "h0m") {
			d = strings.TrimSuffix(d, "0m") // 1h0m: 1h
		}
	}
	return "`" + d + "`"
}

// renderConfigDoc is the markdown table of flags.
func renderConfigDoc(flags []configFlag) string {
	cell := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace
	var b strings.Builder
	b.WriteString("| flag | environment variable | default | description |\n|---|---|---|---|\n")
	for _, f := range flags {
		env := "`" + f.env + "`"
		if f.secretFile {
			env += " or `" + f.env + "_FILE`"
		}
		fmt.Fprintf(&b, "| `-%s` | %s | %s | %s |\n", f.name, env, f.defaultCell(), cell(f.usage))
	}
	return b.String()
}

// TestConfigDoc keeps docs/operations.md's configuration table equal to
// the flags, and every flag's environment variable named after it.
func TestConfigDoc(t *testing.T) {
	flags := configFlags(t)
	for _, f := range flags {
		if want := "SHORTENER_" + strings.ToUpper(strings.ReplaceAll(f.name, "-", "_")); f.env != want {
			t.Errorf("flag -%s: environment variable got %s, want %s (SHORTENER_ and the flag's name in capitals, - as _)", f.name, f.env, want)
		}
	}
	want := "\n" + renderConfigDoc(flags)

	b, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin, end := strings.Index(doc, configDocBegin), strings.Index(doc, configDocEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s: no %s ... %s block for the configuration table", configDocPath, configDocBegin, configDocEnd)
	}
	begin += len(configDocBegin)
	got := doc[begin:end]
	if got == want {
		return
	}
	if *updateConfigDoc {
		if err := os.WriteFile(configDocPath, []byte(doc[:begin]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: configuration table rewritten from the flags", configDocPath)
		return
	}
	t.Errorf("%s: the configuration table differs from parseConfig's flags; regenerate it with\n\t%s\nfirst difference:\n%s",
		configDocPath, configDocRegen, firstLineDiff(got, want))
}

// firstLineDiff names the first line where got and want differ.
func firstLineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the block:\n\tgot  %q\n\twant %q", i+1, gl, wl)
		}
	}
	return "(none: only line endings differ)"
}

// TestConfigDocDefaults pins the table's rendering of defaults.
func TestConfigDocDefaults(t *testing.T) {
	for _, tt := range []struct {
		f    configFlag
		want string
	}{
		{configFlag{typ: "duration", def: "24h0m0s"}, "`24h`"},
		{configFlag{typ: "duration", def: "1h0m0s"}, "`1h`"},
		{configFlag{typ: "duration", def: "5m0s"}, "`5m`"},
		{configFlag{typ: "duration", def: "1m30s"}, "`1m30s`"},
		{configFlag{typ: "duration", def: "500ms"}, "`500ms`"},
		{configFlag{typ: "duration", def: "1h30m0s"}, "`1h30m`"},
		{configFlag{typ: "duration"}, "`0s`"},
		{configFlag{typ: "int"}, "`0`"},
		{configFlag{typ: ""}, "`false`"},
		{configFlag{typ: "", def: "true"}, "`true`"},
		{configFlag{typ: "string"}, ""},
		{configFlag{typ: "string", def: "x", usage: "a secret (required: why)"}, "required"},
	} {
		got := tt.f.defaultCell()
		if got != tt.want {
			t.Errorf("%s %q: got %s, want %s", tt.f.typ, tt.f.def, got, tt.want)
		}
		// A duration shown must read back as the flag's default.
		if tt.f.typ == "duration" && tt.f.def != "" {
			shown, err1 := time.ParseDuration(strings.Trim(got, "`"))
			def, err2 := time.ParseDuration(tt.f.def)
			if err1 != nil || err2 != nil || shown != def {
				t.Errorf("duration %q shown as %s: reads back as %v (%v), want %v", tt.f.def, got, shown, err1, def)
			}
		}
	}
}
