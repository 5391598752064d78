package devserver

import (
	"net"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

const (
	clusterName = "active"
	// loopback is where the internal services listen, whatever Options.IP says.
	loopback = "127.0.0.1"
)

// ports are the TCP ports one server instance listens on.
type ports struct {
	frontend, frontendHTTP, internalFrontend, history, matching, worker int
}

// pickPorts returns the frontend port asked for and a fresh port for every
// other listener. Metrics and pprof are left off, so they need none.
func pickPorts(frontendIP string, frontend int) (ports, error) {
	p := ports{frontend: frontend}
	var err error
	if p.frontend == 0 {
		if p.frontend, err = freePort(frontendIP); err != nil {
			return p, err
		}
	}
	if p.frontendHTTP, err = freePort(frontendIP); err != nil {
		return p, err
	}
	for _, port := range []*int{&p.internalFrontend, &p.history, &p.matching, &p.worker} {
		if *port, err = freePort(loopback); err != nil {
			return p, err
		}
	}
	return p, nil
}

// dialHost is the address other processes, and the server's own services,
// use to reach a listener bound to ip: the loopback when ip is a wildcard.
func dialHost(ip string) string {
	parsed := net.ParseIP(ip)
	switch {
	case parsed == nil || !parsed.IsUnspecified():
		return ip
	case parsed.To4() != nil:
		return loopback
	default:
		return "::1"
	}
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// sqlitePersistence keeps everything in one SQLite database.
func sqlitePersistence(sql *config.SQL) config.Persistence {
	return config.Persistence{
		DefaultStore:     "sqlite",
		VisibilityStore:  "sqlite",
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{"sqlite": {SQL: sql}},
	}
}

// postgresPersistence keeps the state and visibility in two PostgreSQL
// databases, as docker-compose.yml's Temporal does.
func postgresPersistence(pg pgStores) config.Persistence {
	return config.Persistence{
		DefaultStore:     "default",
		VisibilityStore:  "visibility",
		NumHistoryShards: postgresShards,
		DataStores: map[string]config.DataStore{
			"default":    {SQL: pg.main},
			"visibility": {SQL: pg.visibility},
		},
	}
}

// serverConfig is the static configuration of a single-node server on
// store with archival, metrics and pprof off.
func serverConfig(o Options, p ports, store config.Persistence) *config.Config {
	frontendAddr := hostPort(dialHost(o.IP), p.frontend)
	var c config.Config
	c.Global.Membership.MaxJoinDuration = 10 * time.Second
	c.Global.Membership.BroadcastAddress = loopback
	c.Persistence = store
	c.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontendAddr,
				HTTPAddress:            hostPort(dialHost(o.IP), p.frontendHTTP),
			},
		},
	}
	c.DCRedirectionPolicy.Policy = "noop"
	c.Services = map[string]config.Service{
		string(primitives.FrontendService): {RPC: config.RPC{GRPCPort: p.frontend, HTTPPort: p.frontendHTTP, BindOnIP: o.IP}},
		// The worker service's way in: with it configured, and
		// PublicClient.HostPort empty, the server's own client goes here.
		string(primitives.InternalFrontendService): {RPC: config.RPC{GRPCPort: p.internalFrontend, BindOnIP: loopback}},
		string(primitives.HistoryService):          {RPC: config.RPC{GRPCPort: p.history, BindOnIP: loopback}},
		string(primitives.MatchingService):         {RPC: config.RPC{GRPCPort: p.matching, BindOnIP: loopback}},
		string(primitives.WorkerService):           {RPC: config.RPC{GRPCPort: p.worker, BindOnIP: loopback}},
	}
	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	return &c
}

// schedulerWorkers is the size of each of the history service's task
// scheduler pools.
const schedulerWorkers = 16

// serverOptions wires the configuration, static membership (no gossip
// ports), the logger, dynamic config, the API key (see keyClaims) and
// internode TLS (see internodeTLS) into temporal.NewServer options.
func serverOptions(c *config.Config, p ports, o Options, logger serverLogger) ([]temporal.ServerOption, error) {
	internode, err := newInternodeTLS()
	if err != nil {
		return nil, err
	}
	hosts := map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService:         static.SingleLocalHost(hostPort(dialHost(o.IP), p.frontend)),
		primitives.InternalFrontendService: static.SingleLocalHost(hostPort(loopback, p.internalFrontend)),
		primitives.HistoryService:          static.SingleLocalHost(hostPort(loopback, p.history)),
		primitives.MatchingService:         static.SingleLocalHost(hostPort(loopback, p.matching)),
		primitives.WorkerService:           static.SingleLocalHost(hostPort(loopback, p.worker)),
	}
	dynamic := dynamicconfig.StaticClient{
		// The Web UI polls visibility several times a second; the default
		// of 10 makes it stutter.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// The history service caches 128,000 workflows' mutable states
		// and 256 MiB of history events by default, closed ones included
		// until they age out. One machine's open tasks fit in far less; a
		// workflow that falls out of the cache is read back from SQLite.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():     4096,
		dynamicconfig.EventsHostLevelCacheMaxSizeBytes.Key(): 32 << 20,
	}
	// The history service's task schedulers start 512 workers each, sized
	// for a cluster; one shard on one SQLite connection keeps a few busy.
	// With 1,000 open tasks the idle ones were a third of the process's
	// goroutines.
	for _, k := range []dynamicconfig.GenericSetting{
		dynamicconfig.TransferProcessorSchedulerWorkerCount,
		dynamicconfig.TimerProcessorSchedulerWorkerCount,
		dynamicconfig.VisibilityProcessorSchedulerWorkerCount,
		dynamicconfig.ReplicationProcessorSchedulerWorkerCount,
		dynamicconfig.ReplicationLowPriorityProcessorSchedulerWorkerCount,
	} {
		dynamic[k.Key()] = schedulerWorkers
	}
	return []temporal.ServerOption{
		temporal.WithConfig(c),
		temporal.ForServices(append(slices.Clone(temporal.DefaultServices), string(primitives.InternalFrontendService))),
		temporal.WithTLSConfigFactory(internode),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorization.NewDefaultAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return keyClaims{key: []byte(o.APIKey)} }),
		temporal.WithDynamicConfigClient(dynamic),
	}, nil
}
