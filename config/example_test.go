package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

const exampleFile = "../ampflow.example.yaml"

// The example file documents every key, with its environment variable, and
// sets each to its default, so neither can drift from the code.
func TestExampleFileCoversEveryKey(t *testing.T) {
	text, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	f := viper.New()
	f.SetConfigFile(exampleFile)
	if err := f.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	for _, key := range Keys() {
		if !f.InConfig(key) {
			t.Errorf("%s: not in %s", key, exampleFile)
		}
		if !strings.Contains(string(text), EnvName(key)) {
			t.Errorf("%s: %s does not name %s", key, exampleFile, EnvName(key))
		}
	}

	fromExample, err := LoadEnv(New(), exampleFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs(exampleFile); fromExample.File != want {
		t.Errorf("File = %q, want %q", fromExample.File, want)
	}
	fromExample.File = "" // which file was read, not a key
	if defaults := defaultConfig(t); !reflect.DeepEqual(fromExample, defaults) {
		t.Errorf("%s differs from the defaults:\nexample:\n%s\ndefaults:\n%s", exampleFile, fromExample, defaults)
	}
}
