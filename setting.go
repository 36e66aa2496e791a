package shortener

import "fmt"

// SettingError is one value of a package's Config that the package
// cannot work with. A Config's Validate method (sentinel, cache,
// trending, clicks, lease, store, handler) returns every one it finds,
// joined; each names its field rather than a flag or a variable, because
// the packages have no flags: the program that filled the Config
// (cmd/shortener) finds the flag that sets Field and names that.
type SettingError struct {
	Field   string // the Config field at fault, e.g. "Timeout"
	Problem string // what is wrong with it, e.g. "must be positive, got 0s"
}

func (e *SettingError) Error() string { return e.Field + " " + e.Problem }

// Invalid returns a *SettingError for field, its problem formatted as
// by fmt.Sprintf.
func Invalid(field, format string, a ...any) error {
	return &SettingError{Field: field, Problem: fmt.Sprintf(format, a...)}
}
