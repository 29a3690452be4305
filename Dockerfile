# One image carries the three binaries; the operator's pods pick theirs by command:
#   /manager (operator), /namesrv -c <conf>, /broker -n <addrs> -c <conf>
# Build: docker build -t openrmq/rocketmq-operator:0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/ ./cmd/...

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/ /
USER 65532:65532
EXPOSE 9876 10911 10912
ENTRYPOINT ["/manager"]
