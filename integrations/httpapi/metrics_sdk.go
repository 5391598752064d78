package httpapi

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// The Temporal SDK asks for metrics by name with whatever tags the call
// site has, so one name may come with different tag sets. Prometheus vectors
// need fixed label names, so the SDK's series are kept here and handed
// to the registry as constant metrics by an unchecked collector, which
// the registry allows to vary labels within a family.

type sdkKind int

const (
	sdkCounter sdkKind = iota
	sdkGauge
	sdkTimer
)

func (k sdkKind) String() string {
	return [...]string{"counter", "gauge", "timer"}[k]
}

type sdkCollector struct {
	mu     sync.Mutex
	kinds  map[string]sdkKind // metric name → the kind that claimed it first
	series map[string]*sdkSeries
}

func newSDKCollector() *sdkCollector {
	return &sdkCollector{kinds: map[string]sdkKind{}, series: map[string]*sdkSeries{}}
}

// sdkSeries is one metric name with one set of label values. It is the
// SDK's Counter, Gauge and Timer at once; its kind decides which is used.
type sdkSeries struct {
	kind   sdkKind
	desc   *prometheus.Desc
	values []string

	mu      sync.Mutex
	value   float64  // counter total or gauge value
	count   uint64   // timer observations
	sum     float64  // timer seconds
	buckets []uint64 // timer observations per bucket (not cumulative)
}

// get returns the series of name and tags, creating it on first use.
func (c *sdkCollector) get(kind sdkKind, name string, tags map[string]string) *sdkSeries {
	name = promName(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.kinds[name]; !ok {
		c.kinds[name] = kind
	} else if k != kind {
		// A family has one type; a clash gets a name of its own.
		name += "_" + kind.String()
	}
	labels := slices.Sorted(maps.Keys(tags))
	var key strings.Builder
	key.WriteString(name)
	values := make([]string, len(labels))
	for i, l := range labels {
		values[i] = tags[l]
		key.WriteString("\xff" + l + "\xfe" + values[i])
	}
	if s, ok := c.series[key.String()]; ok {
		return s
	}
	s := &sdkSeries{
		kind:   kind,
		desc:   prometheus.NewDesc(name, "Temporal SDK "+kind.String()+" "+name+".", labels, nil),
		values: values,
	}
	if kind == sdkTimer {
		s.buckets = make([]uint64, len(durationBuckets))
	}
	c.series[key.String()] = s
	return s
}

// Describe sends nothing, which makes the collector unchecked.
func (c *sdkCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends a constant metric per series.
func (c *sdkCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	all := slices.Collect(maps.Values(c.series))
	c.mu.Unlock()
	for _, s := range all {
		if m, err := s.metric(); err == nil {
			ch <- m
		}
	}
}

func (s *sdkSeries) metric() (prometheus.Metric, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.kind {
	case sdkCounter:
		return prometheus.NewConstMetric(s.desc, prometheus.CounterValue, s.value, s.values...)
	case sdkGauge:
		return prometheus.NewConstMetric(s.desc, prometheus.GaugeValue, s.value, s.values...)
	}
	cumulative := make(map[float64]uint64, len(durationBuckets))
	var n uint64
	for i, b := range durationBuckets {
		n += s.buckets[i]
		cumulative[b] = n
	}
	return prometheus.NewConstHistogram(s.desc, s.count, s.sum, cumulative, s.values...)
}

// Inc implements client.MetricsCounter; counters only go up.
func (s *sdkSeries) Inc(d int64) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	s.value += float64(d)
	s.mu.Unlock()
}

// Update implements client.MetricsGauge.
func (s *sdkSeries) Update(v float64) {
	s.mu.Lock()
	s.value = v
	s.mu.Unlock()
}

// Record implements client.MetricsTimer, in seconds.
func (s *sdkSeries) Record(d time.Duration) {
	sec := d.Seconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.sum += sec
	if i, _ := slices.BinarySearch(durationBuckets, sec); i < len(s.buckets) {
		s.buckets[i]++
	}
}

// sdkHandler implements client.MetricsHandler onto the collector.
type sdkHandler struct {
	c    *sdkCollector
	tags map[string]string // sanitized label names
}

var _ client.MetricsHandler = sdkHandler{}

// WithTags returns a handler whose metrics carry tags on top of h's, a
// tag of the same name replacing h's.
func (h sdkHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	maps.Copy(merged, h.tags)
	for k, v := range tags {
		merged[promName(k)] = v
	}
	return sdkHandler{c: h.c, tags: merged}
}

// Counter returns the counter of name with h's tags.
func (h sdkHandler) Counter(name string) client.MetricsCounter {
	return h.c.get(sdkCounter, name, h.tags)
}

// Gauge returns the gauge of name with h's tags.
func (h sdkHandler) Gauge(name string) client.MetricsGauge {
	return h.c.get(sdkGauge, name, h.tags)
}

// Timer returns the timer of name with h's tags, a histogram in seconds.
func (h sdkHandler) Timer(name string) client.MetricsTimer {
	return h.c.get(sdkTimer, name, h.tags)
}

// promName turns s into a valid Prometheus metric or label name.
func promName(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, r := range b {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}
