"""Terminal helpers the CLI and the features' sub-apps share: options, JSON and text output,
event rendering, following a run."""
