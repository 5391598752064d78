package workers

import (
	"errors"
	"fmt"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/config"
)

// DecisionKeyFile is the file in data_dir where `ampflow dev` keeps the
// decision key it made, when auth.decision_key and auth.decision_key_file
// are unset.
const DecisionKeyFile = config.DevDecisionKeyFile

// resolveDecisionKey returns the decision key that signs and checks the
// admins' answers: auth.decision_key or auth.decision_key_file, else,
// when file is set (`ampflow dev`), the key kept there (made on first
// use). Without one the worker does not start: it could take no answer.
func resolveDecisionKey(cfg config.Config, file string) ([]byte, error) {
	key, err := cfg.DecisionKey()
	if !errors.Is(err, config.ErrNoDecisionKey) || file == "" {
		return key, err
	}
	s, err := keptSecret(file, "decision key")
	if err != nil {
		return nil, fmt.Errorf("auth.decision_key: %w", err)
	}
	key, err = decision.ParseKey(s)
	if err != nil {
		return nil, fmt.Errorf("auth.decision_key: %s: %w", file, err)
	}
	return key, nil
}
