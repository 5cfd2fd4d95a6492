//! The change stream of [`FsStore`](crate::FsStore): notifications of one directory,
//! debounced per name, compared with what was reported, plus a periodic full reread.
//!
//! The stream is a state machine polled by the consumer, not a background task: it owns the
//! watcher, so dropping the stream stops it. See [`ResourceStore::watch`] on `FsStore` for the
//! rules.
//!
//! [`ResourceStore::watch`]: muster_core::ResourceStore::watch

mod debounce;
mod source;
#[cfg(test)]
mod tests;
mod tracker;

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_core::stream::BoxStream;
use futures_util::StreamExt;
use muster_core::{StoreError, StoreEvent};
use tokio::time::{Instant, Interval, MissedTickBehavior};

use crate::store::{FsKind, Inner, blocking};
use debounce::Debouncer;
use source::{Signal, Source};
use tracker::{Queue, Tracker};

/// A watch of the definitions of kind `K`, beginning with a `Resynced` of every valid object.
pub(crate) fn watch<K: FsKind>(
    inner: Arc<Inner>,
) -> BoxStream<'static, Result<StoreEvent<K>, StoreError>> {
    let state = Watch::<K>::new(inner);
    futures_util::stream::unfold(state, |mut state| async move {
        let item = state.next().await;
        Some((item, state))
    })
    .boxed()
}

/// The state of one watch.
#[derive(Debug)]
struct Watch<K: FsKind> {
    inner: Arc<Inner>,
    started: bool,
    source: Option<Source>,
    resync: Option<Interval>,
    pending: Debouncer,
    tracker: Tracker<K>,
    queue: Queue<K>,
}

/// Why the watch woke up.
enum Wake {
    Signal(Option<Signal>),
    Due,
    Resync,
}

impl<K: FsKind> Watch<K> {
    fn new(inner: Arc<Inner>) -> Self {
        let pending = Debouncer::new(inner.watch.debounce);
        Self {
            inner,
            started: false,
            source: None,
            resync: None,
            pending,
            tracker: Tracker::default(),
            queue: Queue::new(),
        }
    }

    /// The next event, waiting for one as long as it takes.
    async fn next(&mut self) -> Result<StoreEvent<K>, StoreError> {
        if !self.started {
            self.start().await;
        }
        loop {
            if let Some(item) = self.queue.pop_front() {
                return item;
            }
            self.step().await;
        }
    }

    /// Starts watching, then reads every file: the `Resynced`, followed by an `Invalid` for
    /// every broken file. The watcher starts first, so no change falls between the two.
    async fn start(&mut self) {
        self.started = true;
        let config = self.inner.watch.clone();
        let dir = self.inner.defs.dir().to_owned();
        let created = blocking({
            let dir = dir.clone();
            move || crate::store::ensure_dir(&dir)
        })
        .await;
        let mut errors = Queue::new();
        if let Err(e) = created {
            errors.push_back(Err(e));
        }
        if config.file_events {
            match Source::start(&dir) {
                Ok(source) => self.source = Some(source),
                Err(e) => tracing::warn!(
                    dir = %dir.display(),
                    error = %e,
                    "cannot watch the directory; changes are seen by the periodic resync only"
                ),
            }
        }
        if !config.resync.is_zero() {
            let mut interval =
                tokio::time::interval_at(Instant::now() + config.resync, config.resync);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            self.resync = Some(interval);
        }
        let mut initial = Queue::new();
        self.rescan(&mut initial).await;
        // The objects are announced by the `Resynced`, not one by one.
        initial.retain(|item| !matches!(item, Ok(StoreEvent::Applied(_))));
        self.queue
            .push_back(Ok(StoreEvent::Resynced(self.tracker.objects())));
        self.queue.extend(initial);
        self.queue.extend(errors);
    }

    /// Waits for a notification, a due name or the resync, and queues what it brings.
    async fn step(&mut self) {
        let deadline = self.pending.next_deadline();
        let wake = tokio::select! {
            signal = recv(&mut self.source) => Wake::Signal(signal),
            () = sleep_until(deadline) => Wake::Due,
            () = tick(&mut self.resync) => Wake::Resync,
        };
        match wake {
            Wake::Signal(Some(Signal::Changed(names))) => {
                let now = Instant::now();
                for name in names {
                    self.pending.touch(name, now);
                }
            }
            Wake::Signal(Some(Signal::Rescan)) | Wake::Resync => {
                let mut out = Queue::new();
                self.rescan(&mut out).await;
                self.queue.extend(out);
            }
            Wake::Signal(None) => {
                tracing::warn!("the directory watcher stopped; relying on the periodic resync");
                self.source = None;
            }
            Wake::Due => {
                let due = self.pending.take_due(Instant::now());
                self.refresh(due).await;
            }
        }
    }

    /// Reads every file and queues the differences with what was reported.
    async fn rescan(&mut self, out: &mut Queue<K>) {
        let inner = Arc::clone(&self.inner);
        match blocking(move || inner.defs.read_all::<K>()).await {
            Ok(entries) => {
                let mut names = self.tracker.names();
                names.extend(entries.iter().map(|e| e.file.name.clone()));
                self.tracker.update(&self.inner.defs, &names, entries, out);
            }
            Err(e) => out.push_back(Err(e)),
        }
    }

    /// Reads the files of `names` and queues the differences with what was reported.
    async fn refresh(&mut self, names: BTreeSet<String>) {
        let inner = Arc::clone(&self.inner);
        let to_read = names.clone();
        let read = blocking(move || {
            let mut entries = Vec::new();
            for name in &to_read {
                entries.extend(inner.defs.read_name::<K>(name)?);
            }
            Ok(entries)
        })
        .await;
        match read {
            Ok(entries) => {
                self.tracker
                    .update(&self.inner.defs, &names, entries, &mut self.queue);
            }
            Err(e) => self.queue.push_back(Err(e)),
        }
    }
}

/// The next signal of the watcher; never, without one.
async fn recv(source: &mut Option<Source>) -> Option<Signal> {
    match source {
        Some(source) => source.recv().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `deadline`; forever, without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The next resync; never, without periodic resyncs.
async fn tick(resync: &mut Option<Interval>) {
    match resync {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}
