package main

import (
	"github.com/openrmq/rocketmq-operator/controllers"
)

// newAdmin returns the remoting admin client. Until pkg/admin lands, every broker call
// fails with a clear error; Kubernetes objects are still managed.
// TODO(pkg/admin): return admin.New(...) here.
func newAdmin() controllers.BrokerAdmin { return controllers.UnavailableAdmin{} }
