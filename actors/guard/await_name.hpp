// Waiting for a host name to resolve. In Kubernetes a pod's own name (its headless service's
// record) may appear some seconds after the pod starts, so a task that cannot resolve its own
// address yet retries, with exponential backoff, up to a deadline, instead of exiting at once.
// The backoff is the retry policy between attempts; nothing is awaited that could signal us.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace actorps {

/// A lookup: "" when `host` resolves, else why not, in words.
using name_lookup = std::function<std::string(const std::string& host)>;

/// getaddrinfo for a TCP address of `host`.
std::string resolve_host(const std::string& host);

/// Looks `host` up until it resolves or `timeout` has passed, waiting 50 ms between the first
/// attempts and doubling to at most 1 s. `on_wait` is told once, after the first failure (to
/// log it). Returns "" once it resolves, else the last failure and how long it tried.
std::string await_name(const std::string& host, std::chrono::milliseconds timeout,
                       const std::function<void(const std::string& why)>& on_wait = {},
                       const name_lookup& lookup = resolve_host);

} // namespace actorps
