
/// Replaced with the commit id by the packaging scripts for the build (see BuildInfo.commit).
let buildCommit = "unknown (built from a source tree)"
