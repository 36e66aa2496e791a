module shortener

go 1.26.0

require (
	github.com/KimMachineGun/automemlimit v1.0.2
	github.com/axiomhq/hyperloglog v0.3.0
	github.com/bwmarrin/snowflake v0.3.0
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-sql-driver/mysql v1.10.2
	github.com/labstack/echo/v4 v4.16.5
	github.com/maypok86/otter/v2 v2.4.0
	github.com/medama-io/go-useragent v1.2.5
	github.com/oapi-codegen/runtime v1.9.0
	github.com/oschwald/maxminddb-golang/v2 v2.9.1
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	github.com/prometheus/procfs v0.22.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/yeqown/go-qrcode/v2 v2.3.0
	golang.org/x/net v0.60.0
	golang.org/x/sync v0.25.0
	golang.org/x/time v0.16.0
)

require github.com/pbnjay/memory v0.0.0-20210728143218-7b4eea64cf58 // indirect

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/boyter/go-string v1.0.5 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-metro v0.0.0-20250106013310-edb8663e5e33 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/kamstrup/intmap v0.5.2 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/labstack/gommon v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.22 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	github.com/yeqown/reedsolomon v1.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/crypto v0.57.0
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
