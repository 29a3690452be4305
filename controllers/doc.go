// Package controllers holds the operator's reconcilers: what each owns, and so may create,
// change or delete, and what it only reads. internal/resource builds every Kubernetes
// object they apply and names it; applyAll (apply.go) creates or updates the builders'
// objects in order and records an Event for each one created or changed.
//
//	NameServerReconciler  (nameserver_controller.go) owns a NameServer's StatefulSet,
//	        headless and client Services, ConfigMap, PodDisruptionBudget and, under
//	        spec.networkPolicy, its NetworkPolicy; writes its status (address, replicas).
//	BrokerReconciler      (broker_controller.go: the checklist; broker_*.go, tls.go,
//	        networkpolicy.go: its steps) owns a Broker's NetworkPolicy, the rendered
//	        plain_acl.yml Secret and the operator's own account Secret (spec.acl without
//	        secretName), the name-server ConfigMap, and per group a ConfigMap, headless
//	        Service, StatefulSet and PodDisruptionBudget (groups scaled in are removed);
//	        on the running brokers it changes only namesrvAddr (UPDATE_BROKER_CONFIG);
//	        reads the NameServers, Users, Topics and pods for its status and conditions.
//	ConsumerGroupReconciler (consumergroup_*.go) owns a subscription group on every
//	        master of its Broker, and the offset resets and migrations its spec asks
//	        for; reports lag. With deletionPolicy Delete, deleting the resource deletes
//	        the group on the brokers (a finalizer).
//	TopicReconciler       (topic_*.go) owns a topic on the master of every selected
//	        group of its Broker, its route in the name servers and, for ordered
//	        topics, the ORDER_TOPIC_CONFIG entry; puts back what changed outside the
//	        operator; deletes them as its deletion policy says.
//	UserReconciler        (user_controller.go) owns nothing: it reports whether a
//	        User's account is in its Broker's rendered plain_acl.yml and loaded by every
//	        broker pod (the Broker controller renders the file).
//
// BrokerAdmins (acl.go, tls.go) is shared by the Broker, ConsumerGroup and Topic
// reconcilers: the admin client per Broker, signed under spec.acl and over TLS under
// spec.tls. Its mutex guards its table only and is never held across an API read.
// setup.go wires them to a manager (SetupAll); conditions.go and metrics.go hold what
// they share.
package controllers
