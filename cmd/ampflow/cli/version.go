package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/temporal"
)

// versionInfo is the output of version.
type versionInfo struct {
	Version     string `json:"version"`
	Revision    string `json:"revision,omitempty"`
	Go          string `json:"go"`
	TemporalSDK string `json:"temporal_sdk"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version(), TemporalSDK: "v" + temporal.SDKVersion}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v.Revision = s.Value
		}
	}
	for _, d := range bi.Deps {
		if d.Path == "go.temporal.io/sdk" {
			v.TemporalSDK = d.Version
		}
	}
	return v
}

func (a *App) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of ampflow, Go and the Temporal SDK",
		Args:  exactArgs(0, "none"),
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			if a.JSON() {
				return a.PrintJSON(v)
			}
			rev := ""
			if v.Revision != "" {
				rev = " (" + v.Revision + ")"
			}
			_, err := fmt.Fprintf(a.Stdout, "ampflow %s%s\ngo %s\ntemporal sdk %s\n", v.Version, rev, v.Go, v.TemporalSDK)
			return err
		},
	}
}
