//! Freeing big values off the hot path.
//!
//! Dropping a table of a million keys, or a collection of a million elements, takes
//! long enough to stall every client of the thread doing it. Such drops are handed to
//! one background thread instead (Redis's lazyfree); small ones are freed inline,
//! where handing them over would cost more than freeing them.

use std::sync::mpsc;
use std::sync::OnceLock;

type Garbage = Box<dyn Send>;

static FREEER: OnceLock<mpsc::Sender<Garbage>> = OnceLock::new();

fn freeer() -> &'static mpsc::Sender<Garbage> {
    FREEER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Garbage>();
        std::thread::Builder::new()
            .name("kvik-lazyfree".into())
            .spawn(move || {
                for garbage in rx {
                    drop(garbage);
                }
            })
            .expect("spawn the lazyfree thread");
        tx
    })
}

/// Drop `value` on the background thread.
pub fn drop_later<T: Send + 'static>(value: T) {
    if let Err(e) = freeer().send(Box::new(value)) {
        drop(e.0);
    }
}

/// Values owning more than this many heap bytes are freed in the background.
pub const BACKGROUND_FREE_BYTES: usize = 64 * 1024;

/// Free a removed entry: inline when small, on the background thread when big, so
/// deleting a collection of millions of elements costs its thread almost nothing.
pub fn free_entry(entry: crate::keyspace::EntryBox) {
    if entry.value.heap_size() > BACKGROUND_FREE_BYTES {
        drop_later(entry);
    }
}

/// Free a replaced value the same way.
pub fn free_value(value: crate::types::Value) {
    if value.heap_size() > BACKGROUND_FREE_BYTES {
        drop_later(value);
    }
}
