def select_common_block_size(kv_manager_block_size, backends):
    for backend in backends:
        for size in backend.get_supported_kernel_block_sizes():
            base = getattr(size, "base", size)
            if kv_manager_block_size % base:
                raise ValueError(f"No common block size for {kv_manager_block_size}")
    return kv_manager_block_size
