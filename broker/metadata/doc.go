// Package metadata holds the broker's persistent tables: topic configs (topics.json),
// subscription groups (subscriptionGroup.json) and consumer offsets (consumerOffset.json),
// all under <storePathRootDir>/config/ in the JSON the Java broker writes, so that a Java
// broker's config folder loads here and ours loads there.
//
// Every file is written atomically: the new content goes to <file>.tmp, which is fsynced;
// the current file is kept as <file>.bak; the temp file is renamed over the file and the
// folder is fsynced. Loading falls back to <file>.bak when <file> is missing or damaged.
//
// Lock order: each manager has one mutex and never calls another manager while holding it.
package metadata
