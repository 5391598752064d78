package config

import (
	"fmt"
	"os"
	"reflect"
)

// NotifyWebhook is an endpoint of the operators' that gets every notice
// of every task (decisions; status changes with notify.status_updates),
// signed with the secret in the variable SecretEnv names.
type NotifyWebhook struct {
	URL       string `mapstructure:"url" json:"url"`
	SecretEnv string `mapstructure:"secret_env" json:"secret_env"`
}

// Secret is the webhook's secret, from the variable SecretEnv names.
func (w NotifyWebhook) Secret() string { return os.Getenv(w.SecretEnv) }

func init() {
	defaults["notify.webhooks"] = []NotifyWebhook{}
	jsonListTypes[reflect.TypeOf([]NotifyWebhook{})] = true
}

func (c Config) validateNotifyWebhooks(ps *problems) {
	for i, w := range c.Notify.Webhooks {
		k := fmt.Sprintf("notify.webhooks[%d]", i)
		ps.url(k+".url", w.URL)
		if !envNameRE.MatchString(w.SecretEnv) {
			ps.add(k+".secret_env", "must name the environment variable holding the secret, not %q", w.SecretEnv)
		}
	}
}
