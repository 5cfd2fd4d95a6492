//! The object store: one global resourceVersion sequence, objects keyed by resource,
//! namespace and name (listed in etcd's key order), and the event history watches replay.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::registry::{self, Builtin, ResourceType};
use super::status::ApiError;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Added,
    Modified,
    Deleted,
}

/// One change, as watches see it.
#[derive(Debug)]
pub(crate) struct Change {
    pub(crate) rv: u64,
    pub(crate) group: String,
    pub(crate) resource: String,
    pub(crate) namespace: String,
    pub(crate) kind: EventKind,
    /// The object after the change (its last state for a delete).
    pub(crate) object: Value,
    /// The object before the change, for watches that filter by selectors.
    pub(crate) old: Option<Value>,
}

type ResourceKey = (String, String);
type ObjectKey = (String, String);

/// Everything behind the lock.
#[derive(Debug)]
pub(crate) struct State {
    /// The last resourceVersion handed out.
    pub(crate) rv: u64,
    /// The registered resource types.
    pub(crate) types: Vec<Arc<ResourceType>>,
    objects: HashMap<ResourceKey, BTreeMap<ObjectKey, Value>>,
    history: VecDeque<Arc<Change>>,
    /// Every change after this resourceVersion is in `history`.
    pub(crate) compacted: u64,
    /// How many changes the history keeps.
    pub(crate) window: usize,
}

/// The shared store.
#[derive(Debug)]
pub(crate) struct Store {
    state: Mutex<State>,
    changes: broadcast::Sender<Arc<Change>>,
}

fn key(rt: &ResourceType) -> ResourceKey {
    rt.storage_key()
}

/// `metadata.name` of an object.
pub(crate) fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `metadata.namespace` of an object.
pub(crate) fn namespace_of(obj: &Value) -> &str {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `metadata.resourceVersion` parsed.
pub(crate) fn rv_of(obj: &Value) -> Option<u64> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

impl Store {
    pub(crate) fn new(window: usize) -> Self {
        let (changes, _) = broadcast::channel(4096);
        let store = Self {
            state: Mutex::new(State {
                rv: 0,
                types: registry::builtins(),
                objects: HashMap::new(),
                history: VecDeque::new(),
                compacted: 0,
                window: window.max(1),
            }),
            changes,
        };
        {
            let mut st = store.lock();
            for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                let rt = st.builtin(Builtin::Namespace);
                let obj = json!({
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": ns,
                        "uid": uuid::Uuid::new_v4().to_string(),
                        "creationTimestamp": super::now(),
                        "labels": {"kubernetes.io/metadata.name": ns},
                    },
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                });
                st.put(&store.changes, &rt, None, obj);
            }
        }
        store
    }

    /// Takes the lock (a poisoned lock is taken over: the state is still consistent, every
    /// mutation being a few assignments).
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A receiver of every change after the current state (take it under the lock).
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.changes.subscribe()
    }

    pub(crate) fn sender(&self) -> &broadcast::Sender<Arc<Change>> {
        &self.changes
    }
}

impl State {
    /// The resource type of a built-in.
    pub(crate) fn builtin(&self, b: Builtin) -> Arc<ResourceType> {
        self.types
            .iter()
            .find(|t| t.builtin == Some(b))
            .cloned()
            .unwrap_or_else(|| unreachable!("built-ins are always registered"))
    }

    /// The type serving `group/version/plural`.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.group == group && t.plural == plural && t.version(version).is_some())
            .cloned()
    }

    /// Reads one object.
    pub(crate) fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(&key(rt))?
            .get(&(ns.to_owned(), name.to_owned()))
    }

    /// Every object of a type, in one namespace or all, in key order.
    pub(crate) fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Vec<&Value> {
        let Some(map) = self.objects.get(&key(rt)) else {
            return Vec::new();
        };
        match ns {
            Some(ns) => map
                .range((ns.to_owned(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v)
                .collect(),
            None => map.values().collect(),
        }
    }

    /// Whether a namespace exists.
    pub(crate) fn namespace(&self, ns: &str) -> Option<&Value> {
        let rt = self.builtin(Builtin::Namespace);
        self.objects
            .get(&key(&rt))?
            .get(&(String::new(), ns.to_owned()))
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn record(&mut self, tx: &broadcast::Sender<Arc<Change>>, change: Change) {
        let change = Arc::new(change);
        self.history.push_back(change.clone());
        while self.history.len() > self.window {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        // no receiver is fine
        let _ = tx.send(change);
    }

    /// Stores a new or changed object with the next resourceVersion and records the change.
    pub(crate) fn put(
        &mut self,
        tx: &broadcast::Sender<Arc<Change>>,
        rt: &ResourceType,
        old: Option<&Value>,
        mut obj: Value,
    ) -> Value {
        let rv = self.next_rv();
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        let ns = namespace_of(&obj).to_owned();
        let name = name_of(&obj).to_owned();
        self.objects
            .entry(key(rt))
            .or_default()
            .insert((ns.clone(), name), obj.clone());
        let kind = if old.is_some() {
            EventKind::Modified
        } else {
            EventKind::Added
        };
        self.record(
            tx,
            Change {
                rv,
                group: key(rt).0,
                resource: key(rt).1,
                namespace: ns,
                kind,
                object: obj.clone(),
                old: old.cloned(),
            },
        );
        obj
    }

    /// Removes an object, recording a DELETED change carrying the deletion's resourceVersion.
    pub(crate) fn remove(
        &mut self,
        tx: &broadcast::Sender<Arc<Change>>,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> Option<Value> {
        let mut obj = self
            .objects
            .get_mut(&key(rt))?
            .remove(&(ns.to_owned(), name.to_owned()))?;
        let old = obj.clone();
        let rv = self.next_rv();
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.record(
            tx,
            Change {
                rv,
                group: key(rt).0,
                resource: key(rt).1,
                namespace: ns.to_owned(),
                kind: EventKind::Deleted,
                object: obj.clone(),
                old: Some(old),
            },
        );
        Some(obj)
    }

    /// Drops every stored object of a type (its CRD is gone), recording the deletions.
    pub(crate) fn drop_all(&mut self, tx: &broadcast::Sender<Arc<Change>>, rt: &ResourceType) {
        let keys: Vec<ObjectKey> = self
            .objects
            .get(&key(rt))
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for (ns, name) in keys {
            self.remove(tx, rt, &ns, &name);
        }
        self.objects.remove(&key(rt));
    }

    /// Every object of every type in a namespace (for namespace deletion).
    pub(crate) fn namespaced_contents(&self, ns: &str) -> Vec<(Arc<ResourceType>, String)> {
        let mut out = Vec::new();
        for rt in self
            .types
            .iter()
            .filter(|t| t.namespaced && t.builtin != Some(Builtin::EventsV1Event))
        {
            for obj in self.list(rt, Some(ns)) {
                out.push((rt.clone(), name_of(obj).to_owned()));
            }
        }
        out
    }

    /// Objects that name `uid` among their owners.
    pub(crate) fn dependents_of(&self, uid: &str) -> Vec<(Arc<ResourceType>, String, String)> {
        let mut out = Vec::new();
        for rt in self
            .types
            .iter()
            .filter(|t| t.builtin != Some(Builtin::EventsV1Event))
        {
            for obj in self.list(rt, None) {
                let owned = obj
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                    });
                if owned {
                    out.push((
                        rt.clone(),
                        namespace_of(obj).to_owned(),
                        name_of(obj).to_owned(),
                    ));
                }
            }
        }
        out
    }

    /// Whether an object with this uid exists.
    pub(crate) fn uid_exists(&self, uid: &str) -> bool {
        self.objects
            .values()
            .flat_map(BTreeMap::values)
            .any(|o| o.pointer("/metadata/uid").and_then(Value::as_str) == Some(uid))
    }

    /// The recorded changes after `rv`, or the 410 error when they were compacted.
    pub(crate) fn since(&self, rv: u64) -> Result<Vec<Arc<Change>>, ApiError> {
        if rv < self.compacted {
            return Err(ApiError::expired(format!(
                "too old resource version: {rv} ({})",
                self.compacted + 1
            )));
        }
        Ok(self.history.iter().filter(|c| c.rv > rv).cloned().collect())
    }

    /// Forgets the whole history: a watch from any earlier resourceVersion gets 410 Gone.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }
}
