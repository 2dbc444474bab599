use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_sim::fs::{FaultOptions, SimFs};
use std::path::Path;
fn main() {
    let rt = madsim::runtime::Runtime::new();
    rt.block_on(async {
        let fs = SimFs::new(1, FaultOptions::none()).unwrap();
        fs.create_dir_all(Path::new("/d")).await.unwrap();
        let f = fs
            .open(Path::new("/d/a"), OpenMode::CreateNew)
            .await
            .unwrap();
        fs.sync_dir(Path::new("/d")).await.unwrap();
        f.write_at(&[1u8; 300], 0).await.unwrap();
        f.sync_data().await.unwrap();
        drop(f);
        fs.crash();
        let _ = fs.flip_random_bit(|_| true);
        let f = fs
            .open(Path::new("/d/a"), OpenMode::ReadWrite)
            .await
            .unwrap();
        f.set_len(0).await.unwrap();
        f.sync_data().await.unwrap();
        drop(f);
        let f = fs
            .open(Path::new("/d/a"), OpenMode::ReadWrite)
            .await
            .unwrap();
        println!("len after truncate {}", f.len().await.unwrap());
        f.write_at(&[2u8; 100], 0).await.unwrap();
        println!("len after write {}", f.len().await.unwrap());
        let mut buf = vec![0u8; 300];
        let n = f.read_at(&mut buf, 0).await.unwrap();
        println!("read {n} bytes: first {} at100 {}", buf[0], buf[150]);
    });
}
