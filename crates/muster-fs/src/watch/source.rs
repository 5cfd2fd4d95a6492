//! Change notifications of the operating system for one directory, reduced to the names of
//! the definitions that changed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::layout::split_definition_name;

/// Notifications buffered before the watch reads them; past this, a full rescan replaces them.
const CAPACITY: usize = 1024;

/// What a notification asks the watch to do.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Signal {
    /// These definitions may have changed.
    Changed(Vec<String>),
    /// Notifications were lost: reread everything.
    Rescan,
}

/// A running watcher of one directory; dropping it stops the watcher.
#[derive(Debug)]
pub(super) struct Source {
    _watcher: RecommendedWatcher,
    rx: mpsc::Receiver<Signal>,
    overflow: Arc<AtomicBool>,
}

impl Source {
    /// Watches `dir` (not its subdirectories).
    pub(super) fn start(dir: &Path) -> notify::Result<Self> {
        let (tx, rx) = mpsc::channel(CAPACITY);
        let overflow = Arc::new(AtomicBool::new(false));
        let lost = Arc::clone(&overflow);
        let mut watcher = notify::recommended_watcher(move |event| {
            if let Some(signal) = signal(event)
                && tx.try_send(signal).is_err()
            {
                lost.store(true, Ordering::Release);
            }
        })?;
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(Self {
            _watcher: watcher,
            rx,
            overflow,
        })
    }

    /// The next signal; [`Signal::Rescan`] when notifications were dropped since the last
    /// one. `None` when the watcher stopped.
    pub(super) async fn recv(&mut self) -> Option<Signal> {
        let signal = self.rx.recv().await;
        if self.overflow.swap(false, Ordering::Acquire) {
            return Some(Signal::Rescan);
        }
        signal
    }
}

/// The signal of one notification, `None` when it concerns no definition.
///
/// Opening and reading a file (the store's own reads among them) are not changes; closing a
/// file written to is.
fn signal(event: notify::Result<notify::Event>) -> Option<Signal> {
    let event = match event {
        Ok(event) => event,
        Err(_) => return Some(Signal::Rescan),
    };
    if event.need_rescan() {
        return Some(Signal::Rescan);
    }
    if let EventKind::Access(access) = event.kind
        && access != AccessKind::Close(AccessMode::Write)
    {
        return None;
    }
    let names: Vec<String> = event
        .paths
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .filter_map(split_definition_name)
        .map(|(name, _)| name.to_owned())
        .collect();
    (!names.is_empty()).then_some(Signal::Changed(names))
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, Flag, ModifyKind, RenameMode};

    use super::*;

    fn event(kind: EventKind, paths: &[&str]) -> notify::Result<notify::Event> {
        let mut event = notify::Event::new(kind);
        for p in paths {
            event = event.add_path((*p).into());
        }
        Ok(event)
    }

    #[test]
    fn changes_of_definitions_only() {
        assert_eq!(
            signal(event(
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                &["/d/a.yaml", "/d/b.yml"]
            )),
            Some(Signal::Changed(vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            signal(event(
                EventKind::Create(CreateKind::File),
                &["/d/.a.yaml.tmp-1-2", "/d/notes.txt", "/d"]
            )),
            None
        );
        assert_eq!(
            signal(event(
                EventKind::Access(AccessKind::Open(AccessMode::Any)),
                &["/d/a.yaml"]
            )),
            None
        );
        assert_eq!(
            signal(event(
                EventKind::Access(AccessKind::Close(AccessMode::Write)),
                &["/d/a.yaml"]
            )),
            Some(Signal::Changed(vec!["a".into()]))
        );
        let rescan = notify::Event::new(EventKind::Other).set_flag(Flag::Rescan);
        assert_eq!(signal(Ok(rescan)), Some(Signal::Rescan));
        assert_eq!(
            signal(Err(notify::Error::generic("queue overflow"))),
            Some(Signal::Rescan)
        );
    }
}
