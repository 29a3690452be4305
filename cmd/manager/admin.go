package main

import (
	"github.com/openrmq/rocketmq-operator/controllers"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// newAdmin is the production broker-admin edge: pkg/admin over rc, adapted to the
// controllers' BrokerAdmin (controllers.RemotingAdmin).
func newAdmin(rc *remoting.Client) controllers.BrokerAdmin {
	c := admin.New(rc)
	c.OnCall = controllers.ObserveAdminCall
	return controllers.RemotingAdmin{C: c}
}
