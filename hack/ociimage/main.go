// Command ociimage assembles the project's container image from the static binaries in
// bin/ without a Docker engine: one layer holding /manager, /namesrv, /broker and
// /rmqbench on an empty base, written as a tarball that `docker load` and `podman load`
// accept. It gives
// the same filesystem and entrypoint as the Dockerfile's final stage, minus distroless's
// base files, which static binaries do not need. The config names the platform (linux and
// the build's architecture), without which `ctr images import` refuses the tarball. The
// same tool makes the test cluster's pause and CoreDNS images (hack/cluster):
//
//	go run ./hack/ociimage -bin DIR -binaries pause -entrypoint /pause -user 0 -title pause \
//	  -tag registry.k8s.io/pause:3.10 -out pause.tar
//
//	go run ./hack/ociimage -bin bin -tag openrmq/rocketmq-operator:0.1.0 -out bin/image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var opts options
	flag.StringVar(&opts.binDir, "bin", "bin", "folder holding the static binaries")
	flag.StringVar(&opts.tag, "tag", "openrmq/rocketmq-operator:0.1.0", "image reference recorded in the tarball")
	flag.StringVar(&opts.out, "out", "bin/image.tar", "tarball to write")
	binaries := flag.String("binaries", "manager,namesrv,broker,rmqbench", "comma-separated binaries of -bin to put at the image's root")
	entrypoint := flag.String("entrypoint", "/manager", "the image's entrypoint")
	flag.StringVar(&opts.user, "user", nonroot, "user:group the image runs as")
	flag.StringVar(&opts.title, "title", "rocketmq-operator", "org.opencontainers.image.title label")
	flag.Parse()
	opts.binaries = strings.Split(*binaries, ",")
	opts.entrypoint = []string{*entrypoint}
	if opts.title != "rocketmq-operator" {
		opts.ports = []string{} // only the project's image exposes the RocketMQ ports
	}
	digest, err := build(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%s, %s)\n", opts.out, opts.tag, digest)
}
