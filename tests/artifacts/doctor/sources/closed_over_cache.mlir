module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64x32x128xbf16>) -> (tensor<64x32x128xbf16> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<"0x3E3B80BF53BF103F25BF0DBD2140"> : tensor<8192x16x8x128xbf16>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<8192x16x8x128xbf16>
    %c = stablehlo.constant dense<[2048, 2048]> : tensor<2xi32>
    %0:2 = stablehlo.custom_call @paged_attention(%arg0, %cst, %cst_0, %c) {api_version = 4 : i32, backend_config = {scale = 0.0883883461 : f32}} : (tensor<64x32x128xbf16>, tensor<8192x16x8x128xbf16>, tensor<8192x16x8x128xbf16>, tensor<2xi32>) -> (tensor<64x32x128xbf16>, tensor<1048576xf32>)
    return %0#0 : tensor<64x32x128xbf16>
  }
}
