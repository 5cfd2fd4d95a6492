//! What a watch has reported so far, and the events that bring a consumer from there to the
//! files' current state.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;

use muster_core::{Object, ObjectKey, StoreError, StoreEvent};

use crate::store::{Definitions, Entry, FsKind};

/// The events waiting to be handed out.
pub(super) type Queue<K> = VecDeque<Result<StoreEvent<K>, StoreError>>;

/// The last reported object of every name, and the last reported problems of every broken
/// file.
#[derive(Debug)]
pub(super) struct Tracker<K: FsKind> {
    known: BTreeMap<String, Object<K>>,
    broken: BTreeMap<(String, PathBuf), String>,
}

impl<K: FsKind> Default for Tracker<K> {
    fn default() -> Self {
        Self {
            known: BTreeMap::new(),
            broken: BTreeMap::new(),
        }
    }
}

impl<K: FsKind> Tracker<K> {
    /// Every valid object, sorted by key.
    pub(super) fn objects(&self) -> Vec<Object<K>> {
        let mut objects: Vec<_> = self.known.values().cloned().collect();
        objects.sort_by_key(Object::key);
        objects
    }

    /// Every name that was reported, as an object or as a broken file.
    pub(super) fn names(&self) -> BTreeSet<String> {
        self.known
            .keys()
            .cloned()
            .chain(self.broken.keys().map(|(name, _)| name.clone()))
            .collect()
    }

    /// Compares the files of `names` (`entries`, every existing file of those names in order
    /// of precedence) with what was reported and queues the differences.
    pub(super) fn update(
        &mut self,
        defs: &Definitions,
        names: &BTreeSet<String>,
        entries: Vec<Entry<K>>,
        out: &mut Queue<K>,
    ) {
        let mut by_name: BTreeMap<String, Vec<Entry<K>>> = BTreeMap::new();
        for entry in entries {
            by_name
                .entry(entry.file.name.clone())
                .or_default()
                .push(entry);
        }
        for name in names {
            let files = by_name.remove(name).unwrap_or_default();
            self.update_name(defs, name, files, out);
        }
    }

    fn update_name(
        &mut self,
        defs: &Definitions,
        name: &str,
        files: Vec<Entry<K>>,
        out: &mut Queue<K>,
    ) {
        let mut current = None;
        let mut still_broken = BTreeSet::new();
        for (i, entry) in files.into_iter().enumerate() {
            match entry.result {
                Ok(obj) if i == 0 => current = Some(obj),
                Ok(_) => {}
                Err(error) => {
                    let problems: Vec<String> =
                        error.problems().iter().map(ToString::to_string).collect();
                    let problems = problems.join("; ");
                    let slot = (name.to_owned(), entry.file.path.clone());
                    if self.broken.get(&slot) != Some(&problems) {
                        out.push_back(Ok(StoreEvent::Invalid {
                            key: Some(ObjectKey::new(defs.namespace(), name)),
                            source: defs.resolve(&entry.file.path).display().to_string(),
                            error: problems.clone(),
                        }));
                        self.broken.insert(slot.clone(), problems);
                    }
                    still_broken.insert(slot);
                }
            }
        }
        self.broken
            .retain(|slot, _| slot.0 != name || still_broken.contains(slot));
        match (self.known.remove(name), current) {
            (Some(old), Some(new)) => {
                if old.key() != new.key() {
                    out.push_back(Ok(StoreEvent::Deleted(old)));
                    out.push_back(Ok(StoreEvent::Applied(new.clone())));
                } else if !same_definition(&old, &new) {
                    out.push_back(Ok(StoreEvent::Applied(new.clone())));
                }
                self.known.insert(name.to_owned(), new);
            }
            (None, Some(new)) => {
                out.push_back(Ok(StoreEvent::Applied(new.clone())));
                self.known.insert(name.to_owned(), new);
            }
            (Some(old), None) => out.push_back(Ok(StoreEvent::Deleted(old))),
            (None, None) => {}
        }
    }
}

/// Whether two states of an object have the same metadata and spec; the resource version and
/// the status are not compared.
fn same_definition<K: FsKind>(a: &Object<K>, b: &Object<K>) -> bool {
    let mut meta = b.metadata.clone();
    meta.resource_version
        .clone_from(&a.metadata.resource_version);
    a.metadata == meta && a.spec == b.spec
}
