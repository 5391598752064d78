package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// chromiumPath finds Debian's chromium. Without it the browser tests skip,
// unless AMPFLOW_TEST_BROWSER=1 (CI) makes its absence a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AMPFLOW_TEST_BROWSER") == "1" {
		t.Fatal("AMPFLOW_TEST_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH: browser tests skipped (AMPFLOW_TEST_BROWSER=1 makes this a failure)")
	return ""
}

// browser is one headless Chromium with a fresh profile.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 900))
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// session opens a tab in a browser context of its own: its own cookies.
func (b *browser) session() *tab {
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	return newTab(b.t, ctx)
}

// tab is one browser tab.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// another opens a tab beside t, sharing its cookies.
func (tb *tab) another() *tab {
	ctx, cancel := chromedp.NewContext(tb.ctx)
	tb.t.Cleanup(cancel)
	return newTab(tb.t, ctx)
}

// newTab opens the tab of ctx. The first action on a chromedp context
// opens its tab for the life of the context it is given, so it is given
// the tab's own context, not one with a deadline.
func newTab(t *testing.T, ctx context.Context) *tab {
	t.Helper()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return &tab{t: t, ctx: ctx}
}

func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

func evalIn[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript condition to hold on the page.
func (tb *tab) until(what string, within time.Duration, expr string) time.Duration {
	tb.t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText.slice(0, 3000) : ''"))
			cancel()
			tb.t.Fatalf("%s: not within %s (last error %v); the page reads:\n%s", what, within, err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.do("opening "+url, chromedp.Navigate(url))
}

// screenshotDir is where screenshots go: AMPFLOW_SCREENSHOTS, or a new
// temporary directory that is kept for a reviewer.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("AMPFLOW_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "ampflow-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// widths are the viewports pages are checked and photographed at.
var widths = []struct {
	name          string
	width, height int64
}{{"desktop", 1280, 900}, {"phone", 360, 780}}

// colorScheme makes the page see prefers-color-scheme as scheme.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// background is the page's background colour as computed.
const background = `getComputedStyle(document.body).backgroundColor`

// shoot photographs the page at each width, light and dark, and checks
// that nothing is wider than the phone's screen and that the dark scheme
// darkens the page.
func (tb *tab) shoot(dir, name string) {
	tb.t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		tb.do("prefers-color-scheme: "+scheme, colorScheme(scheme))
		time.Sleep(50 * time.Millisecond)
		bg := evalIn[string](tb, background)
		if dark := bg == "rgb(21, 23, 26)"; dark != (scheme == "dark") {
			tb.t.Errorf("%s in the %s scheme has background %s", name, scheme, bg)
		}
		tb.shootWidths(dir, name+"-"+scheme)
	}
	tb.do("back to the system's scheme", colorScheme(""))
}

func (tb *tab) shootWidths(dir, name string) {
	tb.t.Helper()
	for _, w := range widths {
		tb.do("resizing to "+w.name, chromedp.EmulateViewport(w.width, w.height, chromedp.EmulateScale(1)))
		time.Sleep(100 * time.Millisecond)
		if over := evalIn[float64](tb, "document.documentElement.scrollWidth"); w.name == "phone" && over > float64(w.width)+1 {
			tb.t.Errorf("%s at %dpx is %vpx wide: it scrolls sideways", name, w.width, over)
		}
		ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			tb.t.Fatalf("screenshot of %s: %v", name, err)
		}
		file := filepath.Join(dir, name+"-"+w.name+"-"+strconv.Itoa(int(w.width))+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
	tb.do("back to desktop", chromedp.EmulateViewport(1280, 900))
}

// unlabelled lists the page's controls that a screen reader cannot name:
// inputs without a label, buttons and links without text.
const unlabelled = `(() => {
  const bad = [];
  document.querySelectorAll('input:not([type=hidden]), select, textarea').forEach(el => {
    if (!(el.labels && el.labels.length) && !el.getAttribute('aria-label')) bad.push(el.outerHTML.slice(0, 80));
  });
  document.querySelectorAll('button, a[href]').forEach(el => {
    if (!el.textContent.trim() && !el.getAttribute('aria-label')) bad.push(el.outerHTML.slice(0, 80));
  });
  return bad.join('\n');
})()`

func (tb *tab) checkLabels(page string) {
	tb.t.Helper()
	if bad := evalIn[string](tb, unlabelled); bad != "" {
		tb.t.Errorf("%s has unlabelled controls:\n%s", page, bad)
	}
}

func jsString(s string) string { return strconv.Quote(s) }

// tabTo presses Tab until the focused element matches the CSS selector,
// as a keyboard user would reach it, and reports how many presses it took.
func (tb *tab) tabTo(selector string, most int) int {
	tb.t.Helper()
	for n := 1; n <= most; n++ {
		tb.do("pressing Tab", chromedp.KeyEvent(kb.Tab))
		if evalIn[bool](tb, `!!(document.activeElement && document.activeElement.matches(`+jsString(selector)+`))`) {
			return n
		}
	}
	tb.t.Fatalf("%s not reached with %d presses of Tab; focus is on %s", selector, most,
		evalIn[string](tb, `document.activeElement ? document.activeElement.outerHTML.slice(0, 120) : "nothing"`))
	return 0
}

var _ = fmt.Sprintf
