module Common
  def self.application(ctx, name)
    ctx.service(name) { action [:enable, :start] }
  end
end
