//! A minimal RESP2 client for the ignored tests that compare these helpers
//! with a real redis-server 7.0. Start one with
//! `redis-server --port 7200 --save '' --daemonize yes` (or point
//! `KVIK_ORACLE_PORT` elsewhere) and run `cargo test -p kvik-util --lib --
//! --ignored`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// One reply, reduced to what the comparisons need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Status(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

impl Reply {
    /// The payload of a bulk reply; panics on anything else.
    pub fn bulk(self) -> Vec<u8> {
        match self {
            Reply::Bulk(Some(bytes)) => bytes,
            other => panic!("expected a bulk reply, got {other:?}"),
        }
    }

    /// The elements of an array of bulks; panics on anything else.
    pub fn bulks(self) -> Vec<Vec<u8>> {
        match self {
            Reply::Array(items) => items.into_iter().map(Reply::bulk).collect(),
            other => panic!("expected an array reply, got {other:?}"),
        }
    }
}

pub struct Oracle {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Oracle {
    /// Connects to the reference server and selects scratch database `db`
    /// (one per test, as tests run in parallel).
    pub fn connect(db: u8) -> Oracle {
        let port = std::env::var("KVIK_ORACLE_PORT").unwrap_or_else(|_| "7200".into());
        let stream = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap()))
            .expect("a reference redis-server must be listening");
        let mut oracle = Oracle {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        };
        oracle.cmd(&[b"SELECT", db.to_string().as_bytes()]);
        oracle
    }

    /// Sends one command and reads its reply.
    pub fn cmd(&mut self, args: &[&[u8]]) -> Reply {
        self.pipeline(&[args.iter().map(|a| a.to_vec()).collect()])
            .pop()
            .unwrap()
    }

    /// Sends all commands at once, then reads one reply per command.
    pub fn pipeline(&mut self, commands: &[Vec<Vec<u8>>]) -> Vec<Reply> {
        let mut out = Vec::new();
        for args in commands {
            out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for arg in args {
                out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                out.extend_from_slice(arg);
                out.extend_from_slice(b"\r\n");
            }
        }
        self.writer.write_all(&out).unwrap();
        commands.iter().map(|_| self.read_reply()).collect()
    }

    fn read_line(&mut self) -> Vec<u8> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).unwrap();
        line.truncate(line.len() - 2);
        line
    }

    fn read_reply(&mut self) -> Reply {
        let line = self.read_line();
        let rest = line[1..].to_vec();
        let number = || -> i64 { std::str::from_utf8(&rest).unwrap().parse().unwrap() };
        match line[0] {
            b'+' => Reply::Status(rest),
            b'-' => Reply::Error(rest),
            b':' => Reply::Int(number()),
            b'$' => match number() {
                -1 => Reply::Bulk(None),
                len => {
                    let mut data = vec![0; len as usize + 2];
                    self.reader.read_exact(&mut data).unwrap();
                    data.truncate(len as usize);
                    Reply::Bulk(Some(data))
                }
            },
            b'*' => Reply::Array((0..number()).map(|_| self.read_reply()).collect()),
            other => panic!("unexpected reply type {}", other as char),
        }
    }
}
