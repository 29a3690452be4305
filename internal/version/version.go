// Package version is the project's one version: the Makefile tags the image with it
// (make image), the chart's appVersion, config/manager and the samples name it, and the
// manager runs name servers and brokers from DefaultImage when a resource sets no image.
// TestVersionsAgree (internal/version) keeps them equal.
package version

// Version of the operator, its image and its chart's appVersion.
const Version = "0.1.0"

// Repository of the image that holds /manager, /namesrv and /broker.
const Repository = "openrmq/rocketmq-operator"

// DefaultImage is the image of name-server and broker pods whose resource sets no
// spec.image: the one the manager itself runs from.
const DefaultImage = Repository + ":" + Version
