package analytics

import (
	"net/netip"
	"testing"
	"time"
)

// TestAgents parses real User-Agent headers. bot is what the redirect's
// classifier (handler's agentClass) says of each: a bot's device is bot
// whatever its header claims.
func TestAgents(t *testing.T) {
	e := newEnricher(t, Config{Enabled: true, GeoDB: "none", AgentCacheSize: 100}, &fakeKeys{}, newClock(time.Now()))
	for _, tc := range []struct {
		name string
		ua   string
		bot  bool
		want Agent
	}{
		{"Chrome on Windows",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
			false, Agent{BrowserChrome, OSWindows, DeviceDesktop}},
		{"Safari on iPhone",
			"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
			false, Agent{BrowserSafari, OSIOS, DeviceMobile}},
		{"Safari on iPad",
			"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
			false, Agent{BrowserSafari, OSIOS, DeviceTablet}},
		{"Safari on a Mac",
			"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
			false, Agent{BrowserSafari, OSMacOS, DeviceDesktop}},
		{"Chrome on an Android phone",
			"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36",
			false, Agent{BrowserChrome, OSAndroid, DeviceMobile}},
		{"Chrome on an Android tablet (no Mobile)",
			"Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Safari/537.36",
			false, Agent{BrowserChrome, OSAndroid, DeviceTablet}},
		{"Chrome's reduced agent on an Android tablet",
			"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
			false, Agent{BrowserChrome, OSAndroid, DeviceTablet}},
		{"Firefox on an Android tablet (Tablet)",
			"Mozilla/5.0 (Android 14; Tablet; rv:133.0) Gecko/133.0 Firefox/133.0",
			false, Agent{BrowserFirefox, OSAndroid, DeviceTablet}},
		{"Firefox on an Android phone",
			"Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0",
			false, Agent{BrowserFirefox, OSAndroid, DeviceMobile}},
		{"Firefox on Linux",
			"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
			false, Agent{BrowserFirefox, OSLinux, DeviceDesktop}},
		{"Edge on Windows",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
			false, Agent{BrowserEdge, OSWindows, DeviceDesktop}},
		{"Opera on Windows",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 OPR/115.0.0.0",
			false, Agent{BrowserOpera, OSWindows, DeviceDesktop}},
		{"Samsung Internet on a phone",
			"Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
			false, Agent{BrowserSamsungInternet, OSAndroid, DeviceMobile}},
		{"Samsung Internet on a tablet",
			"Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Safari/537.36",
			false, Agent{BrowserSamsungInternet, OSAndroid, DeviceTablet}},
		{"Chrome on iOS",
			"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1",
			false, Agent{BrowserChrome, OSIOS, DeviceMobile}},
		{"Chrome on ChromeOS",
			"Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
			false, Agent{BrowserChrome, OSChromeOS, DeviceDesktop}},
		{"Silk on a Fire tablet",
			"Mozilla/5.0 (Linux; Android 11; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) Silk/131.1.1 like Chrome/131.0.6778.135 Safari/537.36",
			false, Agent{BrowserSilk, OSAndroid, DeviceTablet}},
		{"Yandex on Windows",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 YaBrowser/24.10.0.0 Safari/537.36",
			false, Agent{BrowserYandex, OSWindows, DeviceDesktop}},
		{"a smart TV counts as desktop",
			"Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/4.0 Chrome/76.0.3809.146 TV Safari/537.36",
			false, Agent{BrowserSamsungInternet, OSLinux, DeviceDesktop}},
		{"Googlebot",
			"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
			true, Agent{BrowserOther, OSOther, DeviceBot}},
		{"Googlebot's smartphone crawler",
			"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.69 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
			true, Agent{BrowserChrome, OSAndroid, DeviceBot}},
		{"curl", "curl/8.5.0", true, Agent{BrowserOther, OSOther, DeviceBot}},
		{"empty", "", true, Agent{BrowserOther, OSOther, DeviceBot}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // parsed, then from the cache
				got := e.Enrich(netip.MustParseAddr("192.0.2.1"), tc.ua, tc.bot, time.Now()).Agent
				if got != tc.want {
					t.Fatalf("got %s/%s/%s, want %s/%s/%s", got.Browser, got.OS, got.Device, tc.want.Browser, tc.want.OS, tc.want.Device)
				}
			}
		})
	}
}

// TestAgentCacheBounds shows that a header too long to keep is still
// parsed, every time, and that the cache keeps the others.
func TestAgentCacheBounds(t *testing.T) {
	a, err := newAgentCache(10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	long := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 " +
		string(make([]byte, maxCachedAgent))
	short := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	for range 3 {
		if got := a.lookup(long).agent; got != (Agent{BrowserChrome, OSWindows, DeviceDesktop}) {
			t.Fatalf("long header: got %+v, want chrome/windows/desktop", got)
		}
		a.lookup(short)
	}
	if got := a.parses.Load(); got != 4 {
		t.Errorf("parses: got %d, want 4 (the long header each time, the short once)", got)
	}
}
