package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/viper"
)

// Client is what a client of the HTTP API (the CLI's agent, coordinator
// and admin commands) takes from the configuration: the API and where it
// was read.
type Client struct {
	API API
	// File is the absolute path of the configuration file read, empty
	// when none was.
	File string
}

// LoadClient reads the keys a client needs, api.url and api.token, from
// the file named (else ./ampflow.yaml if present), then AMPFLOW_API_URL
// and AMPFLOW_API_TOKEN looked up with lookup; every other
// key of the file is left unread, so a server's file (its gate secret,
// its chat tokens) serves a client as it is. An unknown key under api is
// an error, as LoadEnv has it, and the API settings are validated.
func LoadClient(file string, lookup func(string) (string, bool)) (Client, error) {
	if file == "" {
		if _, err := os.Stat(DefaultFile); err == nil {
			file = DefaultFile
		}
	}
	c := Client{API: API{URL: defaults["api.url"].(string), Token: defaults["api.token"].(string)}}
	if file != "" {
		f := viper.New()
		f.SetConfigFile(file)
		if filepath.Ext(file) == "" {
			f.SetConfigType("yaml")
		}
		if err := f.ReadInConfig(); err != nil {
			return Client{}, fmt.Errorf("reading config file %s: %w", file, err)
		}
		for _, k := range f.AllKeys() {
			if strings.HasPrefix(k, "api.") && k != "api.url" && k != "api.token" {
				return Client{}, fmt.Errorf("reading config file %s: unknown key %s", file, k)
			}
		}
		if f.IsSet("api.url") {
			c.API.URL = f.GetString("api.url")
		}
		if f.IsSet("api.token") {
			c.API.Token = f.GetString("api.token")
		}
		if abs, err := filepath.Abs(file); err == nil {
			c.File = abs
		} else {
			c.File = file
		}
	}
	if lookup != nil {
		if s, ok := lookup(EnvName("api.url")); ok {
			c.API.URL = s
		}
		if s, ok := lookup(EnvName("api.token")); ok {
			c.API.Token = s
		}
	}
	var ps problems
	Config{API: c.API}.validateAPI(&ps)
	if len(ps) > 0 {
		return Client{}, &ValidationError{Problems: ps}
	}
	return c, nil
}
