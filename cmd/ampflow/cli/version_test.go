package cli

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
)

func TestVersion(t *testing.T) {
	r := run(t, "", nil, nil, "version")
	wantSDK := "temporal sdk v" + temporal.SDKVersion + "\n"
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "ampflow ") ||
		!strings.Contains(r.stdout, "\ngo "+runtime.Version()+"\n") || !strings.HasSuffix(r.stdout, wantSDK) {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}

	r = run(t, "", nil, nil, "version", "-o", "json")
	var v versionInfo
	if err := json.NewDecoder(bytes.NewBufferString(r.stdout)).Decode(&v); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	if r.code != ExitOK || v.Version == "" || v.Go != runtime.Version() || v.TemporalSDK != "v"+temporal.SDKVersion {
		t.Errorf("exit %d, version %+v", r.code, v)
	}
}
