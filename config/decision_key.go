package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ampflow/ampflow/amp/decision"
)

// DevDecisionKeyFile is the file in data_dir where `ampflow dev` keeps the
// decision key it made, when auth.decision_key and auth.decision_key_file
// are unset.
const DevDecisionKeyFile = "decision.key"

// DecisionKeyEnv is the environment variable that sets auth.decision_key.
const DecisionKeyEnv = EnvPrefix + "AUTH_DECISION_KEY"

// ErrNoDecisionKey says that neither auth.decision_key nor
// auth.decision_key_file is set.
var ErrNoDecisionKey = errors.New("auth.decision_key: no decision key: set " + DecisionKeyEnv +
	" or auth.decision_key_file to hex or base64 of at least 32 random bytes, the same for every worker and API process (`ampflow dev` makes one in data_dir)")

// DecisionKey returns the decision key: auth.decision_key, else the
// contents of auth.decision_key_file; ErrNoDecisionKey when neither is set.
func (c Config) DecisionKey() ([]byte, error) {
	if c.Auth.DecisionKey != "" {
		k, err := decision.ParseKey(c.Auth.DecisionKey)
		if err != nil {
			return nil, fmt.Errorf("auth.decision_key: %w", err)
		}
		return k, nil
	}
	if c.Auth.DecisionKeyFile == "" {
		return nil, ErrNoDecisionKey
	}
	b, err := os.ReadFile(c.Auth.DecisionKeyFile)
	if err != nil {
		return nil, fmt.Errorf("auth.decision_key_file: %w", err)
	}
	k, err := decision.ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("auth.decision_key_file %s: %w", c.Auth.DecisionKeyFile, err)
	}
	return k, nil
}

// StoreDecisionKey is the decision key that keys the SSOT's chain, for a
// tool that opens the store itself: DecisionKey, else the key `ampflow
// dev` keeps in data_dir. ErrNoDecisionKey when there is neither.
func (c Config) StoreDecisionKey() ([]byte, error) {
	k, err := c.DecisionKey()
	if !errors.Is(err, ErrNoDecisionKey) {
		return k, err
	}
	b, rerr := os.ReadFile(filepath.Join(c.DataDir, DevDecisionKeyFile))
	if errors.Is(rerr, os.ErrNotExist) {
		return nil, err
	}
	if rerr != nil {
		return nil, fmt.Errorf("auth.decision_key: %w", rerr)
	}
	k, err = decision.ParseKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("auth.decision_key: %s: %w", filepath.Join(c.DataDir, DevDecisionKeyFile), err)
	}
	return k, nil
}
