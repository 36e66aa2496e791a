package main

import (
	"cmp"
	"encoding"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"shortener"
	"shortener/handler"
	"shortener/store"
)

// setting is a row of the configuration's table (Config.settings).
type setting struct {
	name string // the flag
	// p is the field the value goes to: a *string, *int, *int64, *uint,
	// *float64, *bool or *time.Duration, a *secret or *secretFile, or an
	// encoding.TextUnmarshaler that reads a string flag's value.
	p     any
	def   any // the built-in default, of p's type (a string for a TextUnmarshaler)
	usage string
}

// env is the setting's environment variable.
func (s setting) env() string {
	return "SHORTENER_" + strings.ToUpper(strings.ReplaceAll(s.name, "-", "_"))
}

// names is how an error names the setting: both ways of giving it.
func (s setting) names() string { return "$" + s.env() + " (-" + s.name + ")" }

// The kinds of value that are strings on the command line but not in the
// Config, or that the log must not show.
type (
	// secret is a string the start-up log masks.
	secret string
	// secretFile is a secret that may also come from the file that
	// $VAR_FILE names (a mounted Kubernetes or Docker secret).
	secretFile string
	// dsn is a MySQL DSN, logged without its password.
	dsn string
	// list is a comma-separated list, blanks dropped.
	list []string
	// proxies is a list of addresses and CIDR prefixes.
	proxies []netip.Prefix
	// logLevel is a slog.Level read as debug, info, warn or error.
	logLevel slog.Level
)

// nodeID is SHORTENER_NODE_ID: a Snowflake node ID, or auto to claim a
// free one. Its range is the lease's to check (lease.Config.Validate).
type nodeID struct {
	N    int64
	Auto bool
}

func (n *nodeID) UnmarshalText(b []byte) error {
	switch s := strings.TrimSpace(string(b)); s {
	case "":
		return errors.New("is required: 0-1023, distinct per instance, or auto")
	case "auto":
		*n = nodeID{Auto: true}
	default:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q: want 0-1023 or auto", s)
		}
		*n = nodeID{N: v}
	}
	return nil
}

func (n nodeID) String() string {
	if n.Auto {
		return "auto"
	}
	return strconv.FormatInt(n.N, 10)
}

func (l *list) UnmarshalText(b []byte) error {
	*l = splitList(string(b))
	return nil
}

func (p *proxies) UnmarshalText(b []byte) error {
	ps, err := handler.ParseProxies(splitList(string(b)))
	if err != nil {
		return fmt.Errorf("%q: %w", b, err)
	}
	*p = ps
	return nil
}

func (l *logLevel) UnmarshalText(b []byte) error {
	if err := (*slog.Level)(l).UnmarshalText(b); err != nil {
		return fmt.Errorf("%q: want debug, info, warn or error", b)
	}
	return nil
}

// envFlags defines a FlagSet's flags from a table of settings, each
// flag's default the value of its environment variable when that is set,
// and collects every problem, so one start-up error names them all.
type envFlags struct {
	fs       *flag.FlagSet
	getenv   func(string) string
	settings map[uintptr]setting // by the address of the field each fills
	texts    []text              // string flags a TextUnmarshaler reads
	failed   map[uintptr]bool    // fields whose value did not parse
	errs     []error
}

// text is a string flag's value, which s.p reads once flags are parsed.
type text struct {
	raw *string
	s   setting
}

// newEnvFlags defines a flag on fs for each setting.
func newEnvFlags(fs *flag.FlagSet, getenv func(string) string, settings []setting) *envFlags {
	e := &envFlags{fs: fs, getenv: getenv, settings: map[uintptr]setting{}, failed: map[uintptr]bool{}}
	for _, s := range settings {
		e.define(s)
	}
	return e
}

// define defines s's flag, its default the environment variable's value
// when that is set, else s.def.
func (e *envFlags) define(s setting) {
	e.settings[reflect.ValueOf(s.p).Pointer()] = s
	env, usage := s.env(), s.usage+" ($"+s.env()+")"
	v := e.getenv(env)
	switch p := s.p.(type) {
	case *string:
		e.fs.StringVar(p, s.name, cmp.Or(v, s.def.(string)), usage)
	case *secret:
		e.fs.StringVar((*string)(p), s.name, cmp.Or(v, s.def.(string)), usage)
	case *dsn:
		e.fs.StringVar((*string)(p), s.name, cmp.Or(v, s.def.(string)), usage)
	case *secretFile:
		e.fs.StringVar((*string)(p), s.name, e.secretFile(s, v), s.usage+" ($"+env+" or $"+env+"_FILE)")
	case *int:
		e.fs.IntVar(p, s.name, parseEnv(e, s, v, "an integer", strconv.Atoi), usage)
	case *int64:
		e.fs.Int64Var(p, s.name, parseEnv(e, s, v, "an integer", func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }), usage)
	case *uint:
		e.fs.UintVar(p, s.name, parseEnv(e, s, v, "a non-negative integer", func(v string) (uint, error) {
			n, err := strconv.ParseUint(v, 10, 0)
			return uint(n), err
		}), usage)
	case *float64:
		e.fs.Float64Var(p, s.name, parseEnv(e, s, v, "a number", func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }), usage)
	case *bool:
		e.fs.BoolVar(p, s.name, parseEnv(e, s, v, "true or false", strconv.ParseBool), usage)
	case *time.Duration:
		e.fs.DurationVar(p, s.name, parseEnv(e, s, v, "a duration (e.g. 50ms, 2s)", time.ParseDuration), usage)
	case encoding.TextUnmarshaler: // read once the flags are parsed
		raw := new(string)
		e.texts = append(e.texts, text{raw, s})
		e.fs.StringVar(raw, s.name, cmp.Or(v, s.def.(string)), usage)
	default:
		panic(fmt.Sprintf("setting %s: a field of type %T", s.name, s.p))
	}
}

// parseEnv is the default of s's flag: s.def, or v, the environment
// variable's value, when set.
func parseEnv[T any](e *envFlags, s setting, v, what string, parse func(string) (T, error)) T {
	if v == "" {
		return s.def.(T)
	}
	x, err := parse(v)
	if err != nil {
		e.fault(s, fmt.Errorf("$%s: %q is not %s", s.env(), v, what))
	}
	return x
}

// secretFile is the default of a secretFile's flag: its environment
// variable's value, or the content of the file $VAR_FILE names (one
// trailing newline dropped), never both.
func (e *envFlags) secretFile(s setting, v string) string {
	path := e.getenv(s.env() + "_FILE")
	if path == "" {
		return v
	}
	if v != "" {
		e.fault(s, fmt.Errorf("$%s and $%s_FILE are both set: give one", s.env(), s.env()))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		e.fault(s, fmt.Errorf("$%s_FILE: %w", s.env(), err))
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
}

// fault records err for s, whose field keeps a value that is not the
// one given, so that no rule is checked on it.
func (e *envFlags) fault(s setting, err error) {
	e.failed[reflect.ValueOf(s.p).Pointer()] = true
	e.errs = append(e.errs, err)
}

// parsed reads the values of the flags that a TextUnmarshaler reads,
// once the FlagSet has parsed its arguments.
func (e *envFlags) parsed() {
	for _, t := range e.texts {
		if err := t.s.p.(encoding.TextUnmarshaler).UnmarshalText([]byte(*t.raw)); err != nil {
			e.fault(t.s, fmt.Errorf("%s %w", t.s.names(), err))
		}
	}
}

// check adds err, a section's validation, naming for each
// *shortener.SettingError the flag that fills its field: the field of
// that name in section (a pointer to the section in the Config), or the
// one fields gives for it (a pointer into the Config) where the package
// names it otherwise or it follows from another section. A field no flag
// fills is a wiring mistake, named by section and field. A problem
// already reported (a field two packages are given) is not repeated.
func (e *envFlags) check(name string, section any, err error, fields map[string]any) {
	for _, err := range leaves(err) {
		var se *shortener.SettingError
		if !errors.As(err, &se) {
			e.report(fmt.Errorf("%s: %w", name, err))
			continue
		}
		var at uintptr
		if p, ok := fields[se.Field]; ok {
			at = reflect.ValueOf(p).Pointer()
		} else if f := reflect.ValueOf(section).Elem().FieldByName(se.Field); f.IsValid() {
			at = f.Addr().Pointer()
		}
		s, ok := e.settings[at]
		switch {
		case !ok:
			e.report(fmt.Errorf("%s: %w", name, err))
		case !e.failed[at]: // else its value did not parse, as reported
			e.report(fmt.Errorf("%s %s", s.names(), se.Problem))
		}
	}
}

// report adds err unless an error of the same text was.
func (e *envFlags) report(err error) {
	for _, r := range e.errs {
		if r.Error() == err.Error() {
			return
		}
	}
	e.errs = append(e.errs, err)
}

// err is every problem found, joined, in the order found.
func (e *envFlags) err() error { return errors.Join(e.errs...) }

// leaves is err's errors.Join tree flattened.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

// logValue is the setting's value for the start-up log: secrets masked,
// the DSN without its password, durations and levels as they are
// written.
func (s setting) logValue() slog.Value {
	switch p := s.p.(type) {
	case *secret:
		return slog.StringValue(mask(string(*p)))
	case *secretFile:
		return slog.StringValue(mask(string(*p)))
	case *dsn:
		return slog.StringValue(store.RedactDSN(string(*p)))
	case *time.Duration:
		return slog.StringValue(p.String())
	case *logLevel:
		return slog.StringValue(slog.Level(*p).String())
	}
	v := reflect.ValueOf(s.p).Elem().Interface()
	if st, ok := v.(fmt.Stringer); ok {
		return slog.StringValue(st.String())
	}
	return slog.AnyValue(v)
}

func mask(s string) string {
	if s == "" {
		return ""
	}
	return "***"
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
