package main

import (
	_ "github.com/go-telegram/bot"
	_ "github.com/google/go-github/v74/github"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/slack-go/slack"
	_ "github.com/slack-go/slack/slacktest"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/temporalio/ui-server/v2/server"
	_ "github.com/temporalio/ui-server/v2/server/config"
	_ "github.com/temporalio/ui-server/v2/server/server_options"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/testsuite"
	_ "go.temporal.io/sdk/worker"
	_ "go.temporal.io/sdk/workflow"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	_ "go.temporal.io/server/temporal"
	_ "go.temporal.io/server/temporaltest"
)

func main() {}
