// Package compat is the compatibility suite (make test-compat): the official Apache
// RocketMQ Java broker, Java name server and the official Go and Java clients, fetched from
// Maven Central and the Go module proxy, run against our binaries over real TCP on loopback.
//
// The ourbroker_test.go tests run the other way round: the official Java client 4.9.x
// (test/compat/java/src/org/openrmq/compat/BrokerClient.java, BrokerFeatures.java) and
// mqadmin against OUR broker (COMPAT_BIN_DIR/broker) registered with its own name server of
// the kind under test, with JSON and ROCKETMQ binary remoting headers.
//
// The tests carry the "compat" build tag so that `go test ./...` skips them; run them with
// hack/compat.sh, which fetches the Java artifacts into a cache outside the clone and sets:
//
//	COMPAT_NAMESRV         name server under test: "ours" (default, bin/namesrv) or "java"
//	COMPAT_BIN_DIR         directory holding our binaries (default: <repo>/bin)
//	COMPAT_JAVA_CLASSPATH  classpath of the RocketMQ jars (required)
//	COMPAT_JAVA_CLASSES    compiled Java test programs from test/compat/java/src
//	COMPAT_JAVA            java executable (default: $JAVA_HOME/bin/java or java on PATH)
//	COMPAT_JAVA_HEAP_MB    -Xms/-Xmx of each JVM (default 512)
//	COMPAT_WORK_DIR        where process logs and stores go (default: a new temp dir)
//
// This file has no build tag so the package always compiles.
package compat
