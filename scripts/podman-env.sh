# Sourced by scripts/test-debian13.sh and scripts/bench-debian13.sh after they set `out` (their scratch folder):
# the podman set-up the image tests use too (test/helpers/podman.ts). crun and the systemd cgroup manager fail
# in this machine's own container, and podman's default ulimits cannot be set there (runc: "error setting
# rlimit"), so runs use runc, cgroupfs and a containers.conf without default ulimits.
podman_flags='--runtime runc --cgroup-manager=cgroupfs'
printf '[containers]\ndefault_ulimits = []\n' > "$out/containers.conf"
export CONTAINERS_CONF="$out/containers.conf"
