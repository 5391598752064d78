#!/bin/sh
# Creates Temporal's two PostgreSQL databases, or brings their schemas up to
# date, and creates ampflow's SSOT database; safe to run on every start.
# temporal-sql-tool reads the connection from SQL_PLUGIN, SQL_HOST,
# SQL_PORT, SQL_USER and SQL_PASSWORD.
set -eu

for db in temporal temporal_visibility; do
	case "$db" in
	temporal) schema=postgresql/v12/temporal ;;
	*) schema=postgresql/v12/visibility ;;
	esac
	echo "database $db: create, version tables, migrations from $schema"
	temporal-sql-tool --db "$db" create
	temporal-sql-tool --db "$db" setup-schema -v 0.0
	temporal-sql-tool --db "$db" update-schema --schema-name "$schema"
done
# ampflow migrates its own schema when a worker starts; only the database
# is made here. create leaves an existing database alone.
echo "database ampflow: create (ampflow's SSOT)"
temporal-sql-tool --db ampflow create
echo "schemas ready"
