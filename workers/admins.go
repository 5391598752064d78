package workers

import (
	"os"
	"os/user"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
)

// HasAdmins reports whether cfg names anyone who may decide: in admins,
// slack.admins, telegram.admins or as an admin token.
func HasAdmins(cfg config.Config) bool { return len(workflows.NewPolicy(cfg).Admins) > 0 }

// CheckAdmins refuses a configuration under which nobody could decide on
// a task, naming the setting to change. `ampflow worker` checks it before
// it starts; `ampflow dev` makes the local user the admin instead.
func CheckAdmins(cfg config.Config) error {
	if HasAdmins(cfg) {
		return nil
	}
	return &config.ValidationError{Problems: []amp.FieldError{{Path: "admins",
		Problem: `no admin is configured, so nobody could decide on a task: set admins (names), slack.admins, ` +
			`telegram.admins or an auth token of role admin, or admins: ["*"] to let anyone named decide`}}}
}

// OSUser is the name of the operating-system user running ampflow, from
// os/user, else $USER; "" when neither knows.
func OSUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}
