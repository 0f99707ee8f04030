module github.com/foliolog/folio/console/browser

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/foliolog/folio v0.0.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/edsrzf/mmap-go v1.2.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.3 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.1.2 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace github.com/foliolog/folio => ../..
