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
//! - **Bounded.** A message longer than [`EventLogOptions::max_message_bytes`] is cut. When
//!   the current file of a day would grow past [`EventLogOptions::max_file_bytes`], it is
//!   rotated to `events-YYYY-MM-DD.<n>.json` (`n` = 1, 2, …, higher is newer) and a new one
//!   begins; beyond [`EventLogOptions::max_files`] files in all, the oldest are deleted.
//! - **Retention.** Files of days more than [`RETENTION_DAYS`] before today are deleted by the
//!   writer, on its first write of every day.
//! - **Queries** ([`EventLog::query`]) first wait until every event recorded before has been
//!   written, then read the files the filter covers, newest first and each from its end, and
//!   stop once they hold the `limit` newest matching events: `limit: 3` reads a few kilobytes
//!   however large the log is. Rotated files are read when the newer ones do not hold enough.
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

/// The bounds of an event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLogOptions {
    /// Size at which a day's current file is rotated (default 32 MiB).
    pub max_file_bytes: u64,
    /// The most files kept, rotated ones included (default 16).
    pub max_files: usize,
    /// The longest message written; longer ones are cut (default 8 KiB).
    pub max_message_bytes: usize,
    /// How many days of files are kept besides today's (default [`RETENTION_DAYS`]).
    pub retention_days: i64,
}

impl Default for EventLogOptions {
    fn default() -> Self {
        let limits = muster_core::config::EventLimits::default();
        Self::from_limits(&limits)
    }
}

impl EventLogOptions {
    /// The options of the `limits.events` section of `config.yaml`.
    pub fn from_limits(limits: &muster_core::config::EventLimits) -> Self {
        Self {
            max_file_bytes: limits.max_file_bytes,
            max_files: usize::try_from(limits.max_files).unwrap_or(usize::MAX),
            max_message_bytes: limits.max_message_bytes,
            retention_days: RETENTION_DAYS,
        }
    }
}

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
    /// The log in `dir`, created on the first write, with the default bounds; starts the
    /// writer thread.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, EventLogError> {
        Self::with_options(dir, EventLogOptions::default())
    }

    /// The log in `dir` with `options`; starts the writer thread.
    pub fn with_options(
        dir: impl Into<PathBuf>,
        options: EventLogOptions,
    ) -> Result<Self, EventLogError> {
        let dir = dir.into();
        let (commands, queue) = mpsc::sync_channel(QUEUE_CAPACITY);
        let writer = Writer::new(dir.clone(), options);
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

    /// The log in the `events/` directory of a config directory, with `options`.
    pub fn in_config_dir_with(
        layout: &Layout,
        options: EventLogOptions,
    ) -> Result<Self, EventLogError> {
        Self::with_options(layout.events_dir(), options)
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

/// Reads the files `filter` covers, newest first, and keeps the matching events (the newest
/// `filter.limit` of them), oldest first.
fn read_matching(dir: &Path, filter: &EventFilter) -> Result<Vec<Event>, EventLogError> {
    let io = |op, path: &Path| {
        let path = path.to_owned();
        move |source| EventLogError::Io { op, path, source }
    };
    let covers = |date: chrono::NaiveDate| {
        filter.since.is_none_or(|since| date >= since.date_naive())
            && filter.until.is_none_or(|until| date <= until.date_naive())
    };
    let limit = filter.limit.unwrap_or(usize::MAX);
    let mut newest_first = Vec::new();
    for file in files::log_files(dir).map_err(io("list", dir))?.iter().rev() {
        if newest_first.len() >= limit {
            break;
        }
        if !covers(file.date) {
            continue;
        }
        files::for_each_event_rev(&file.path, |event| {
            if filter.matches(&event) {
                newest_first.push(event);
            }
            newest_first.len() < limit
        })
        .map_err(io("read", &file.path))?;
    }
    newest_first.reverse();
    // Files are read newest first and lines in the order written; the stable sort only moves
    // events whose timestamps were recorded out of order.
    newest_first.sort_by_key(|e| e.timestamp);
    Ok(filter.apply(newest_first))
}
