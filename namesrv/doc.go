// Package namesrv is a RocketMQ 4.x wire-compatible name server: brokers register their
// topics with it (REGISTER_BROKER every 30 s), clients ask it for topic routes, and admin
// tools list clusters and topics and keep namespaced KV settings in it.
//
// Embedding:
//
//	cfg := namesrv.DefaultConfig()
//	cfg.BindAddress, cfg.ListenPort = "127.0.0.1", 0 // 0: any free port
//	cfg.KVConfigPath = filepath.Join(dir, "kvConfig.json")
//	ns, err := namesrv.New(cfg)  // validates, loads the KV store
//	err = ns.Start()             // listens, starts the liveness scan
//	addr := ns.Addr()            // "127.0.0.1:port"
//	err = ns.Shutdown(ctx)
//
// # State
//
// Routes live in memory only, rebuilt from broker registrations; several name servers
// run independently and agree because every broker registers with each of them. A
// broker is forgotten when it unregisters, when the connection it registered over
// closes, or when it has not registered for BrokerChannelExpiredTime (checked every
// ScanNotActiveBrokerInterval). A broker group keeps its topics while any of its
// addresses (a slave after its master left) is registered; a topic no live group
// serves disappears.
//
// Removal costs what the removed address contributed, found through indexes (see
// routeTable), and many addresses at once (a closed connection, an expiry scan) go in
// chunks that release the table lock between them, so route lookups keep being
// answered. Up to ten removed brokers are logged one line each, more in one summary.
//
// One connection may have at most MaxBrokersPerConnection (maxBrokersPerConnection,
// default 128) broker addresses registered; a further one is refused with SYSTEM_ERROR
// and a remark naming the key, and logged at most once per 10 s. A broker registers its
// own address over its own connection (a 5.x broker container one per broker it hosts),
// so the cap is far above real use; it stops one client from filling the table.
//
// Only a master's topic table is routed, and only when its DataVersion changed (or on
// its first registration); a slave learns its master's address and HA address from
// the REGISTER_BROKER response.
//
// The KV store is the one file at KVConfigPath, in Java's kvConfig.json format,
// rewritten atomically on every change (see kvStore).
package namesrv
