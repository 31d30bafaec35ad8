# proxmops container image, built by GoReleaser (dockers_v2) from its build
# context: the static binary at $TARGETPLATFORM/proxmops, the build machine's
# CA bundle at build/extras/ca-certificates.crt (packaging/extras.sh) and
# packaging/docker/. From scratch: no shell, no package manager, nothing but
# the binary, CA certificates and a non-root user.
#
#   docker run -d -p 8080:8080 -v proxmops:/data proxmops/proxmops
#
# The database and its key live in the /data volume (the working directory). Configure with PROXMOPS_*
# variables (docs/configuration.md) or a file mounted and named by PROXMOPS_CONFIG.
FROM scratch
ARG TARGETPLATFORM
COPY build/extras/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY packaging/docker/passwd /etc/passwd
COPY packaging/docker/group /etc/group
COPY --chown=65532:65532 packaging/docker/data/ /data/
COPY $TARGETPLATFORM/proxmops /usr/local/bin/proxmops
# No PROXMOPS_SERVER_DATABASEPATH: the database's default, proxmops.db in the
# working directory, is /data/proxmops.db, and PROXMOPS_SERVER_DATABASE
# (PostgreSQL, docs/ha.md) can be given without naming two databases.
ENV PROXMOPS_SOURCE_CACHEDIR=/data/git-cache \
    PROXMOPS_SERVER_ADDR=:8080 \
    HOME=/data \
    TMPDIR=/data
USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/proxmops", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/proxmops"]
CMD ["serve"]
