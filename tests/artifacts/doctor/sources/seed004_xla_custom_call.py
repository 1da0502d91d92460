# From the user's note 004: output dtypes as strings, and no api_version.
import torch
import torch_xla._XLAC as xlac


def paged_attention_custom_call(query_xla, kv_cache_xla, query, config):
    output_xla_tensor = xlac._xla_custom_call(
        [query_xla, kv_cache_xla],         # 输入
        "xla_gpu_paged_attention",       # 在 HLO 中的名称
        [list(query.shape)],             # 输出形状
        [str(query.dtype)],              # 输出类型
        False,                           # has_side_effect
        str(config),                     # backend_config
    )
    return output_xla_tensor
