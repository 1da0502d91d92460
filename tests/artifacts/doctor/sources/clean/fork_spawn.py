# Workers start with 'spawn': each creates its own CUDA context.
import multiprocessing as mp

import torch


def work(i):
    return torch.ones(3, device="cuda").sum().item() + i


if __name__ == "__main__":
    warm = torch.zeros(1, device="cuda")
    with mp.get_context("spawn").Pool(2) as pool:
        print(pool.map(work, range(4)))
