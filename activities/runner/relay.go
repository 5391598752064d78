package runner

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// Relay is a sandboxed run's way to its model API. The CLI holds no key:
// its environment has a placeholder where the key was, and it talks plain
// HTTP to the relay on its own loopback. The relay, in the worker, puts
// the real key where the placeholder is, forwards the request to the
// model API (over TLS for an https one), and meters each response's
// tokens into the run's Meter, which stops the run at its cost cap.
type Relay struct {
	proxy *httputil.ReverseProxy
	meter *Meter
}

// NewRelay relays to upstream (a model API's scheme and host; a path
// given is ignored, the CLI's request path is kept), putting swap's
// secrets in place of their placeholders in the headers and query of each
// request. A nil transport is http.DefaultTransport.
func NewRelay(upstream *url.URL, swap map[string]string, meter *Meter, transport http.RoundTripper, log *slog.Logger) *Relay {
	origin := &url.URL{Scheme: upstream.Scheme, Host: upstream.Host}
	pairs := make([]string, 0, 2*len(swap))
	for placeholder, secret := range swap {
		pairs = append(pairs, placeholder, secret)
	}
	swapper := strings.NewReplacer(pairs...)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{meter: meter}
	r.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(origin)
			for name, values := range pr.Out.Header {
				for i, v := range values {
					values[i] = swapper.Replace(v)
				}
				pr.Out.Header[name] = values
			}
			pr.Out.URL.RawQuery = swapper.Replace(pr.Out.URL.RawQuery)
			// Let the transport ask for and undo the compression, so the
			// meter reads the response as it is.
			pr.Out.Header.Del("Accept-Encoding")
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = meter.read(resp.Body)
			return nil
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			log.Warn("model relay: upstream unreachable", "upstream", origin.String(), "error", err)
			relayError(w, http.StatusBadGateway, "ampflow's model relay could not reach "+origin.String())
		},
	}
	return r
}

// ServeHTTP relays one request, or refuses it once the run's cost cap is
// spent.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if spent, capUSD := r.meter.spent(); spent {
		relayError(w, http.StatusBadRequest, "the run passed its cost cap (max_cost_usd $"+formatUSD(capUSD)+") at ampflow's model relay")
		return
	}
	FullDuplex(w)
	r.proxy.ServeHTTP(w, req)
}

// FullDuplex lets a relayed answer start while the request's body is
// still being read and sent on. Without it the server, at the answer's
// first header, reads what is left of the body itself, beside the
// relay's upstream request that is sending it: the upstream request ends
// short, its connection is closed, and the answer is cut mid-stream (the
// CLI's fetch reports "terminated"). A model API answers once it has
// parsed the request, which can be before the body's end is read. Every
// handler that passes a run's request on calls it first.
func FullDuplex(w http.ResponseWriter) {
	_ = http.NewResponseController(w).EnableFullDuplex()
}

// relayError answers in a shape each vendor's client reads a message from:
// Anthropic's {"type":"error","error":{…}}, OpenAI's and Google's
// {"error":{"message":…}}. A 400 is not retried by any of them.
func relayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":`+quoteJSON(msg)+`}}`+"\n")
}

// Meter counts a run's tokens and dollars at its relays, as the model API
// reports them, and stops the run once they pass its cap.
type Meter struct {
	// Price prices a response's tokens by the model it names (the run's
	// model when it names none).
	Price func(model string, in, out int64) float64
	// Model is the run's configured model.
	Model string

	mu      sync.Mutex
	usage   Usage
	capUSD  float64
	stopped bool
	stop    chan Reason
}

// NewMeter is a meter pricing with price.
func NewMeter(model string, price func(model string, in, out int64) float64) *Meter {
	return &Meter{Model: model, Price: price, stop: make(chan Reason, 1)}
}

// SetCap sets the run's cap in dollars; 0 is none.
func (m *Meter) SetCap(usd float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capUSD = usd
}

// Stop is where the meter says the run must stop (Spec.Stop).
func (m *Meter) Stop() <-chan Reason { return m.stop }

// Usage is what the run's relays counted.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

func (m *Meter) spent() (bool, float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped, m.capUSD
}

// add counts one response.
func (m *Meter) add(model string, in, out, cached int64) {
	if in == 0 && out == 0 {
		return
	}
	if model == "" {
		model = m.Model
	}
	usd := 0.0
	if m.Price != nil {
		usd = m.Price(model, in, out)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.usage.add(Usage{InputTokens: in, OutputTokens: out, CachedTokens: cached, CostUSD: usd, CostReported: m.Price != nil})
	if m.capUSD > 0 && m.usage.CostUSD > m.capUSD && !m.stopped {
		m.stopped = true
		m.stop <- ReasonMaxCost
	}
}
