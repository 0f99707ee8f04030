// Package browser holds the console's tests in a real headless browser
// (Chromium driven by github.com/chromedp/chromedp). It is a module of its
// own so that the root module does not depend on chromedp; it has nothing
// to import. The tests skip, saying so, when no Chromium is installed
// (Debian: apt-get install chromium).
package browser
