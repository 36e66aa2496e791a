package analytics

// The dimensions of a click. Browser, OS and Device are stored as their
// numbers (one byte each in the click journal), so each list's order is
// part of the journal format: a value is never renumbered or reused, and
// new ones are appended before the list's end marker. A number this build
// does not know (written by a newer one) reads as the list's zero value's
// name, "other" or "desktop", so sums over a dimension still equal the
// total.

// Country is an ISO 3166-1 alpha-2 code, upper case ("US"). The zero
// value is unknown: a private or unlisted address, no database, or
// analytics turned off.
type Country [2]byte

// String returns the code, or "ZZ" (CLDR's unknown region) for the zero
// Country.
func (c Country) String() string {
	if c == (Country{}) {
		return "ZZ"
	}
	return string(c[:])
}

// ParseCountry returns the Country of a two-letter code in either case;
// "ZZ" is the zero Country, as String writes it. Anything else is not a
// country.
func ParseCountry(s string) (Country, bool) {
	if len(s) != 2 {
		return Country{}, false
	}
	var c Country
	for i := range 2 {
		b := s[i]
		switch {
		case 'A' <= b && b <= 'Z':
		case 'a' <= b && b <= 'z':
			b -= 'a' - 'A'
		default:
			return Country{}, false
		}
		c[i] = b
	}
	if c == (Country{'Z', 'Z'}) {
		return Country{}, true
	}
	return c, true
}

// Browser is a browser family. Its numbers are part of the journal
// format: append only.
type Browser uint8

// The browsers a dashboard shows: the families with a visible share of
// traffic that the parser tells apart. Opera Mini counts as Opera; a
// browser not listed (and every bot) is BrowserOther.
const (
	BrowserOther Browser = iota
	BrowserChrome
	BrowserFirefox
	BrowserSafari
	BrowserEdge
	BrowserOpera
	BrowserSamsungInternet
	BrowserYandex
	BrowserVivaldi
	BrowserIE
	BrowserHuawei
	BrowserSilk
	browserEnd // not a browser: new ones go above
)

var browserNames = [browserEnd]string{
	"other", "chrome", "firefox", "safari", "edge", "opera",
	"samsung_internet", "yandex", "vivaldi", "ie", "huawei", "silk",
}

// String returns the browser's lower-case name ("chrome").
func (b Browser) String() string { return name(browserNames[:], b) }

// ParseBrowser returns the Browser String names.
func ParseBrowser(s string) (Browser, bool) { return parse[Browser](browserNames[:], s) }

// Browsers returns every Browser in number order.
func Browsers() []Browser { return values[Browser](browserEnd) }

// OS is an operating system family. Its numbers are part of the journal
// format: append only.
type OS uint8

// The operating systems a dashboard shows. iPadOS counts as iOS; an iPad
// that asks for desktop pages says it is a Mac and counts as macOS.
const (
	OSOther OS = iota
	OSWindows
	OSMacOS
	OSLinux
	OSAndroid
	OSIOS
	OSChromeOS
	osEnd // not an OS: new ones go above
)

var osNames = [osEnd]string{"other", "windows", "macos", "linux", "android", "ios", "chromeos"}

// String returns the system's lower-case name ("ios").
func (o OS) String() string { return name(osNames[:], o) }

// ParseOS returns the OS String names.
func ParseOS(s string) (OS, bool) { return parse[OS](osNames[:], s) }

// OSes returns every OS in number order.
func OSes() []OS { return values[OS](osEnd) }

// Device is a device class. Its numbers are part of the journal format:
// append only.
type Device uint8

// The device classes. Desktop is everything that is not a phone, a
// tablet or a bot: computers, but also TVs and consoles. Bot is the
// redirect's own bot verdict (the click's agent class), so the devices'
// bot count always equals the clicks' bot count.
const (
	DeviceDesktop Device = iota
	DeviceMobile
	DeviceTablet
	DeviceBot
	deviceEnd // not a device: new ones go above
)

var deviceNames = [deviceEnd]string{"desktop", "mobile", "tablet", "bot"}

// String returns the class's lower-case name ("mobile").
func (d Device) String() string { return name(deviceNames[:], d) }

// ParseDevice returns the Device String names.
func ParseDevice(s string) (Device, bool) { return parse[Device](deviceNames[:], s) }

// Devices returns every Device in number order.
func Devices() []Device { return values[Device](deviceEnd) }

// Agent is what a User-Agent header says about the client.
type Agent struct {
	Browser Browser
	OS      OS
	Device  Device
}

// Dims is what a click carries for analytics. Its zero value is a click
// about which nothing is known: country unknown, browser and OS other, a
// desktop, no visitor.
type Dims struct {
	Country Country
	Agent   Agent
	// Visitor is a keyed hash of the client's address and User-Agent
	// under the UTC day's key (visitor.go): the same for the same client
	// on the same day on every instance, unrelated across days. 0 means
	// unknown; a known visitor is never 0 (its low bit is set).
	Visitor uint64
}

// name returns names[v], or names[0] for a number past the list.
func name[T ~uint8](names []string, v T) string {
	if int(v) < len(names) {
		return names[v]
	}
	return names[0]
}

// parse returns the number of s in names.
func parse[T ~uint8](names []string, s string) (T, bool) {
	for i, n := range names {
		if n == s {
			return T(i), true
		}
	}
	return 0, false
}

// values returns 0 to end-1.
func values[T ~uint8](end T) []T {
	vs := make([]T, end)
	for i := range vs {
		vs[i] = T(i)
	}
	return vs
}
