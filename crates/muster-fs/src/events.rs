//! [`FsEventLog`]: the event log of filesystem mode, as daily JSON-lines files in `events/`.
//!
//! Every event is one line of `<root>/events/events-YYYY-MM-DD.json` (the UTC day of its
//! timestamp), in the shape of [`Event`]:
//!
//! ```text
//! {"timestamp":"2026-03-09T10:00:00Z","namespace":"default","involvedObject":{"kind":"MCPServer","name":"tools","namespace":"default"},"reason":"MCPServerStarted","message":"MCPServer tools service started successfully","type":"Normal","source":"muster"}
//! ```
//!
//! - **Recording never blocks.** [`EventSink::record`] puts the event on a bounded queue
//!   ([`QUEUE_CAPACITY`]) and returns; a writer thread appends the lines. When the queue is
//!   full, because the disk is stalled, the event is dropped and counted
//!   ([`FsEventLog::dropped`]). The writer runs on a thread of its own, so recording works
//!   inside and outside a Tokio runtime. It ends once every clone of the log is dropped,
//!   after writing what is queued.
//! - **Retention.** Files of days more than [`RETENTION_DAYS`] before today are deleted by the
//!   writer, on its first write of every day.
//! - **Queries** ([`EventLog::query`]) first wait until every event recorded before has been
//!   written, then read the files of the days the filter covers.
//!
//! The text log `events/events.log` of older releases is neither written nor read.

mod files;
#[cfg(test)]
mod tests;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};

use async_trait::async_trait;
use muster_core::{Event, EventFilter, EventLog, EventSink, StoreError};
use tokio::sync::oneshot;

use crate::layout::Layout;
use writer::{Command, Writer};

/// How many days of files the log keeps besides today's.
pub const RETENTION_DAYS: i64 = 30;
/// How many events may wait for the writer before new ones are dropped.
pub const QUEUE_CAPACITY: usize = 4096;

/// An [`EventSink`] appending to the event log files of one directory, and an [`EventLog`]
/// reading them back.
///
/// Cloning is cheap; clones share the writer.
///
/// ```no_run
/// use muster_core::{Event, EventFilter, EventLog, EventSink, EventType};
/// use muster_fs::{FsEventLog, Layout};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let log = FsEventLog::in_config_dir(&Layout::new("/home/me/.config/muster"))?;
/// log.record(Event::new("MCPServer", "tools", "default", "MCPServerStarted",
///     EventType::Normal, "MCPServer tools service started successfully"));
/// let warnings = log.query(&EventFilter {
///     event_type: Some(EventType::Warning),
///     limit: Some(50),
///     ..EventFilter::default()
/// }).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FsEventLog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    commands: SyncSender<Command>,
    dropped: AtomicU64,
}

/// Why the event log could not be started or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventLogError {
    /// A file system call failed.
    #[error("{}: cannot {op}: {source}", .path.display())]
    Io {
        /// What was attempted, e.g. `read`.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The writer thread is gone (it panicked), so recorded events are not written.
    #[error("the event log writer stopped")]
    WriterStopped,
    /// The blocking task reading the files panicked or was cancelled.
    #[error("event log query failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}

// === impl FsEventLog ===

impl FsEventLog {
    /// The log in `dir`, created on the first write; starts the writer thread.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, EventLogError> {
        let dir = dir.into();
        let (commands, queue) = mpsc::sync_channel(QUEUE_CAPACITY);
        let writer = Writer::new(dir.clone(), RETENTION_DAYS);
        std::thread::Builder::new()
            .name("muster-event-log".to_owned())
            .spawn(move || writer.run(&queue))
            .map_err(|source| EventLogError::Io {
                op: "start the writer thread for",
                path: dir.clone(),
                source,
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                dir,
                commands,
                dropped: AtomicU64::new(0),
            }),
        })
    }

    /// The log in the `events/` directory of a config directory.
    pub fn in_config_dir(layout: &Layout) -> Result<Self, EventLogError> {
        Self::new(layout.events_dir())
    }

    /// The directory of the log files.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// How many events were dropped because the queue was full or the writer was gone.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Waits until every event recorded before this call has been written.
    pub async fn flush(&self) -> Result<(), EventLogError> {
        let (done, written) = oneshot::channel();
        let commands = self.inner.commands.clone();
        // The queue may be full: wait for room off the async threads.
        tokio::task::spawn_blocking(move || commands.send(Command::Flush(done)))
            .await
            .map_err(EventLogError::Task)?
            .map_err(|_| EventLogError::WriterStopped)?;
        written.await.map_err(|_| EventLogError::WriterStopped)
    }
}

impl EventSink for FsEventLog {
    fn record(&self, event: Event) {
        match self
            .inner
            .commands
            .try_send(Command::Append(Box::new(event)))
        {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                let dropped = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::warn!(dropped, "event log queue is full; dropping events");
                }
            }
            Err(TrySendError::Disconnected(_)) => {
                self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[async_trait]
impl EventLog for FsEventLog {
    /// The events passing `filter`, oldest first (events of one moment in the order written),
    /// the newest `filter.limit` of them.
    ///
    /// Waits for the events recorded before the call to be written first. Lines of the files
    /// that are not events are skipped; failures are [`StoreError::Backend`].
    async fn query(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        let backend = |e: EventLogError| StoreError::Backend(Box::new(e));
        self.flush().await.map_err(backend)?;
        let dir = self.inner.dir.clone();
        let filter = filter.clone();
        tokio::task::spawn_blocking(move || read_matching(&dir, &filter))
            .await
            .map_err(|e| backend(EventLogError::Task(e)))?
            .map_err(backend)
    }
}

/// Reads the files of the days `filter` covers and keeps the matching events, oldest first.
fn read_matching(dir: &Path, filter: &EventFilter) -> Result<Vec<Event>, EventLogError> {
    let io = |op, path: &Path| {
        let path = path.to_owned();
        move |source| EventLogError::Io { op, path, source }
    };
    let covers = |date: chrono::NaiveDate| {
        filter.since.is_none_or(|since| date >= since.date_naive())
            && filter.until.is_none_or(|until| date <= until.date_naive())
    };
    let mut events = Vec::new();
    for (date, path) in files::log_files(dir).map_err(io("list", dir))? {
        if covers(date) {
            let read = files::read_events(&path).map_err(io("read", &path))?;
            events.extend(read.into_iter().filter(|e| filter.matches(e)));
        }
    }
    // Files are read oldest first and lines in the order written; the stable sort only moves
    // events whose timestamps were recorded out of order.
    events.sort_by_key(|e| e.timestamp);
    Ok(filter.apply(events))
}
