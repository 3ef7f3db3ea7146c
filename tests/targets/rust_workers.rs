// Two worker threads in Rust, with the system allocator (Rust's default),
// each building records the way Rust code allocates: Vec::push growing a
// vector, format! for text, Box for a record kept.
//
// Known figures (the tests count on them; built with Debian's rustc 1.63):
//   worker          per thread (ids from 0, and from 1,000,000), RECORDS
//                   records pushed into a Vec<Box<Record>> that grows by
//                   doubling: 4 pointers first (32 bytes), then 11 reallocs
//                   up to 8,192 pointers (64, 128, ... 65,536 bytes: 131,008
//                   in all); all freed when the thread ends.
//   make_record     per record a Box<Record> (32 bytes: the id and the
//                   label's String) and the label, "record-N" made by
//                   format!, whose String reserves twice the literal text,
//                   14 bytes, which even "record-1004999" fits: 46 bytes in
//                   two blocks, freed with the vector.
//   leak_registry   LEAKED Box<[u8; 1000]>, leaked with Box::leak (1000
//                   bytes each, never freed), from the main thread.
// It prints "workers 5025118890 leaked 190": the sum of the ids and label
// lengths, then of the leaked blocks' last bytes (0 + 1 + ... + 19).
use std::thread;

const RECORDS: usize = 5000;
const LEAKED: usize = 20;

struct Record {
    id: u64,
    label: String,
}

#[inline(never)]
fn make_record(id: u64) -> Box<Record> {
    Box::new(Record { id, label: format!("record-{}", id) })
}

#[inline(never)]
fn worker(first: u64) -> u64 {
    let mut records: Vec<Box<Record>> = Vec::new();
    for n in 0..RECORDS as u64 {
        records.push(make_record(first + n));
    }
    records.iter().map(|record| record.id + record.label.len() as u64).sum()
}

#[inline(never)]
fn leak_registry() -> usize {
    let mut total = 0;
    for n in 0..LEAKED {
        let block: &'static mut [u8; 1000] = Box::leak(Box::new([n as u8; 1000]));
        total += block[999] as usize;
    }
    total
}

fn main() {
    let handles: Vec<_> = (0..2).map(|t| thread::spawn(move || worker(t * 1_000_000))).collect();
    let sum: u64 = handles.into_iter().map(|handle| handle.join().unwrap()).sum();
    println!("workers {} leaked {}", sum, leak_registry());
}
