// Package broker is a RocketMQ 4.x wire-compatible broker: it serves the remoting
// requests of stock producers, consumers and admin tools on top of broker/store.
//
// A [Broker] owns its configuration, message store, metadata tables (topics,
// subscription groups, consumer offsets), client registry and long-poll holder, and
// registers one processor per request code. Processors live by concern:
//
//	broker.go   New, Start, Shutdown, the handler table; a handler's error is answered
//	            SYSTEM_ERROR in one place (remoting.ErrHandlerFunc)
//	names.go, acl.go  run before every handler: illegal topic and group names, plain ACL
//	put.go      the one put path every writer calls: append, HA wake-up, put statistics
//	send.go     SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE
//	reply.go    SEND_REPLY_MESSAGE(_V2): request-reply, pushed to the requester
//	sendback.go CONSUMER_SEND_MSG_BACK (retry and DLQ, through package retry)
//	transaction.go END_TRANSACTION and the CHECK_TRANSACTION_STATE callback
//	pull.go     PULL_MESSAGE and long polling; filtercache.go compiles each
//	            subscription expression once
//	offsetmoved.go PULL_OFFSET_MOVED corrections and OFFSET_MOVED_EVENT
//	clients.go  HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG, GET_CONSUMER_LIST_BY_GROUP,
//	            notifications
//	offsets.go  consumer offsets and queue offset queries, CLONE_GROUP_OFFSET,
//	            GET_ALL_CONSUMER_OFFSET
//	reset.go    INVOKE_BROKER_TO_RESET_OFFSET: offset reset by time
//	connections.go GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST
//	admin.go    topics, groups, broker config and runtime info, message lookups
//	locks.go    LOCK_BATCH_MQ, UNLOCK_BATCH_MQ (orderly consumers); locks are released
//	            when their client unregisters or its connection closes
//	namesrv.go  registration with the name servers
//	callclient.go GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY: relayed to a consumer
//	stats.go    put/get counters for GET_BROKER_RUNTIME_INFO and VIEW_BROKER_STATS_DATA
//	brokerstats.go VIEW_BROKER_STATS_DATA, GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS
//	queueadmin.go QUERY_CONSUME_QUEUE, CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC
//	ha.go       master/slave replication (package ha): the master's HA server and
//	            SYNC_MASTER waits, the slave's commitlog copy and metadata sync,
//	            GET_ALL_DELAY_OFFSET
//	metrics.go  Prometheus metrics (metricsExporterType=PROM): the request path's
//	            counters and histograms; metrics_scrape.go what a scrape reads
//	            (lag, store, HA, connections); docs/metrics.md lists them
//
// The broker uses broker/store's *store.Store directly; the schedule and transaction
// services declare the narrow store interfaces they need. Subpackages: config (broker.conf),
// metadata (topics, groups, offsets files), client (connections and groups),
// longpoll (held pulls); lock, filter, retry, schedule (delayed delivery) and
// transaction come from their own packages.
package broker
