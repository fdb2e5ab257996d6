# Muster's container image: built in one stage, run from a minimal one.
#
#   docker build -t muster:latest .
#   docker run --rm muster:latest version
#
# The runtime image holds the binary, the shared libraries it links
# (test/cluster/tests/test_manifests.py checks this list against
# `ldd build/muster`) and CA certificates, and runs as an unprivileged
# numeric user. manifests/README.md says how to push it and deploy.

# --- build ---------------------------------------------------------------------
# Debian bookworm with Go: scripts/deps, which `make` runs, insists on
# Go >= 1.25 (for the local test cluster) even when only building.
FROM golang:1.25-bookworm AS build
WORKDIR /src
# The build dependencies first, in a layer of their own that only a change
# to scripts/deps invalidates: the Debian -dev packages (libcurl, cJSON,
# libyaml, libuv, OpenSSL) and llhttp, which it downloads from PyPI with
# curl (part of this image) and checks against its sha256.
COPY scripts/deps scripts/deps
RUN scripts/deps
COPY . .
RUN make -j"$(nproc)" build/muster \
	&& install -D -m 0755 -s build/muster /out/muster \
	&& /out/muster version

# --- runtime -------------------------------------------------------------------
FROM debian:bookworm-slim
# Exactly the libraries build/muster links (libcurl brings nghttp2 and the
# rest of its own dependencies), and the CA bundle for HTTPS.
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		libcurl4 libcjson1 libyaml-0-2 libuv1 libssl3 ca-certificates \
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY --from=build /out/muster /usr/local/bin/muster
# Fails the build if a shared library is missing.
RUN /usr/local/bin/muster version
# An unprivileged numeric user (runAsNonRoot can verify a number, not a name).
USER 65532:65532
# /healthz, /readyz, /metrics and /debug when --debug-addr is given.
EXPOSE 10251
ENTRYPOINT ["/usr/local/bin/muster"]
CMD ["run", "--config", "/etc/muster/config/queues.yaml"]
