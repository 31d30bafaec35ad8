// Package settings is the bridge between the settings saved from the UI and
// the configuration: the saved settings are a config.Overlay (the
// configuration file's keys, nil meaning "not saved"), stored encrypted by
// internal/store and applied over the file, environment and flags with
// config.Config.WithOverlay. This package turns a configuration into the
// API's settings document (secrets only as "set" or "not set"), parses a
// PUT body into an overlay, and folds one overlay into another.
package settings
